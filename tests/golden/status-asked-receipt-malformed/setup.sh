base rsa
completed_dir
echo "{}" | put "$STATE/completed/op-3.json"
