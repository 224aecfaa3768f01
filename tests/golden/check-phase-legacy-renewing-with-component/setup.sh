base rsa
state_dir
legacy_text renewing kube-apiserver | put "$STATE/phase"
