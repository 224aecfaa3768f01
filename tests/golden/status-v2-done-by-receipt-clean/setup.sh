base rsa
phase_v2 op-1 restart_pending kube-scheduler
receipt op-1 renewed
