base rsa
state_dir
legacy_text restart_pending etcd | head -c -1 | put "$STATE/phase"
