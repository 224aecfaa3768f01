base rsa
mkdir -p "$ROOT/var/lib/nvke/elsewhere"
chmod 0700 "$ROOT/var/lib/nvke/elsewhere"
ln -s elsewhere "$STATE"
