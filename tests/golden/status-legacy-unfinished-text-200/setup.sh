base rsa
phase_legacy restart_pending etcd
