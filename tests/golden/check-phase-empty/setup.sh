base rsa
state_dir
: | put "$STATE/phase"
