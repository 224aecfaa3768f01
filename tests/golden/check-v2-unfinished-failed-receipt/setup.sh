base rsa
phase_v2 op-1 restart_pending etcd
receipt op-1 failed restart:etcd
