base rsa
state_dir
head -c 102400 /dev/zero | tr "\0" "{" | put "$STATE/phase"
