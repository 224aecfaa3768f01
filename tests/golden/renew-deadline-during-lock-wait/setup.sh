base rsa
# The lock is held; the deadline (1 s after --now) ends the wait long
# before --lock-timeout (120 s): cancelled, nothing written.
owner_file 4242 op-live renew
hold_lock 5
