base rsa
receipt op-2 renewed
mv "$STATE/completed/op-2.json" "$STATE/completed/op-1.json"
: | put "$STATE/lock"
