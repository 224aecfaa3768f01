base rsa
state_dir
{ legacy_text renewing none; echo "EXTRA=1"; } | put "$STATE/phase"
