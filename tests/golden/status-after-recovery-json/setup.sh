base rsa
recovery_receipt recover-1@cp-1
