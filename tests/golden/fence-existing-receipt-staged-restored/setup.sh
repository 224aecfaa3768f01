base rsa
receipt op-1 failed restart:etcd
phase_v2 op-1 restart_pending etcd
stage etcd
