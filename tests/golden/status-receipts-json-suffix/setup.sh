base rsa
# Operation IDs ending in .json: the receipt of `x.json` is `x.json.json`;
# the view strips exactly one `.json` from a file name.
receipt x renewed
receipt x.json failed renew-certs
receipt y.json unchanged
touch -d "2026-11-29T23:40:00Z" "$STATE/completed/x.json"
touch -d "2026-11-29T23:41:00Z" "$STATE/completed/x.json.json"
touch -d "2026-11-29T23:42:00Z" "$STATE/completed/y.json.json"
