base rsa
phase_v2 op-9 restart_pending kube-controller-manager
stage kube-controller-manager
