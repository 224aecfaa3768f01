base rsa
owner_file 4242 op-7 renew
hold_lock 5
