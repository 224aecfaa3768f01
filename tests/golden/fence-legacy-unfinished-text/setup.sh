base rsa
phase_legacy renewing none
: | put "$STATE/lock"
