base rsa
completed_dir
chmod 0770 "$STATE/completed"
stage etcd
