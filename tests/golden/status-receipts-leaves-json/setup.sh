base rsa
# SPEC 4 step 8 (v1.3): an older receipt without leaves, then the newest
# renewal's, listing each leaf it proved renewed (super-admin.conf appeared
# during that run: no serial before).
receipt op-old renewed
touch -d "2026-11-20T00:00:00Z" "$STATE/completed/op-old.json"
RECEIPT_MORE=',
  "certificates": [
    {"name": "apiserver", "serialBefore": "7d960905e9e59aaa0123456789abcdef01234567", "serialAfter": "1a2b3c4d5e6f70819203a4b5c6d7e8f901234567", "notAfterBefore": "2027-06-01T00:00:00Z", "notAfterAfter": "2027-11-29T23:20:00Z"},
    {"name": "etcd-peer", "serialBefore": "3df8", "serialAfter": "4e09", "notAfterBefore": "2027-03-01T00:00:00Z", "notAfterAfter": "2027-11-29T23:20:00Z"},
    {"name": "super-admin.conf", "serialBefore": null, "serialAfter": "5f1a", "notAfterBefore": null, "notAfterAfter": "2027-11-29T23:20:00Z"}
  ]' receipt op-new renewed
touch -d "2026-11-29T23:30:00Z" "$STATE/completed/op-new.json"
