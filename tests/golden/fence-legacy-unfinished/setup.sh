base rsa
phase_legacy restart_pending kube-apiserver
: | put "$STATE/lock"
