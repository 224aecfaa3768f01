base rsa
state_dir
legacy_text renewing none | sed "/^PID=/d" | put "$STATE/phase"
