base rsa
state_dir
legacy_text restart_pending etcd | sed "s/\$/\r/" | put "$STATE/phase"
