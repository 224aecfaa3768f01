base rsa
for i in $(seq -w 1 25); do
  receipt "op-$i" unchanged
  touch -d "2026-11-02T00:00:00Z - $i hours" "$STATE/completed/op-$i.json"
done
