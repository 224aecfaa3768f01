base rsa
phase_v2 op-1 restart_pending kube-apiserver
owner_file 4242 op-1 renew
hold_lock 5
