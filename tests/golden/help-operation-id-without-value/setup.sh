base rsa
