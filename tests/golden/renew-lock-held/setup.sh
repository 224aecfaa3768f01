base rsa
owner_file 4242 op-live renew
stage kube-apiserver
hold_lock 5
