base rsa
phase_v2 op-1 restart_pending kube-apiserver
: | put "$STATE/lock"
