base rsa
state_dir
legacy_text renewing none | sed "s/^CA_SHA256=\(.*\)/CA_SHA256=\U\1/" | put "$STATE/phase"
