base rsa
phase_legacy done none
chmod 0660 "$STATE/phase"
