base rsa
phase_legacy restart_pending kube-apiserver
stage kube-apiserver
