base rsa
hold_lock 5
