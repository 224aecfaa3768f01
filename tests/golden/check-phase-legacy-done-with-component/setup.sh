base rsa
state_dir
legacy_text done etcd | put "$STATE/phase"
