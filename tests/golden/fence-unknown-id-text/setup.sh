base rsa
phase_v2 op-running restart_pending etcd
