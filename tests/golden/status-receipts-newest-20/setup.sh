base rsa
for i in $(seq -w 1 25); do
  receipt "op-$i" renewed
  # op-01 is the newest, op-25 the oldest: mtime order is not name order.
  touch -d "2026-11-02T00:00:00Z - $i hours" "$STATE/completed/op-$i.json"
done
