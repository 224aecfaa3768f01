base rsa
state_dir
legacy_text done none | head -c -1 | put "$STATE/phase"
: | put "$STATE/lock"
stage etcd
