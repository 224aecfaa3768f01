base rsa
owner_file 4243 null legacy-v1
hold_lock 5
