base rsa
state_dir
mkfifo -m 0600 "$STATE/phase"
