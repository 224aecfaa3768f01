base rsa
rm -rf "$ROOT/etc/kubernetes"
