base rsa
state_dir
legacy_text paused none | put "$STATE/phase"
