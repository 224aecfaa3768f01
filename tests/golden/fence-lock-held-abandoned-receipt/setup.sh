base rsa
receipt op-1 abandoned cancelled
owner_file 4242 op-7 renew
hold_lock 6
