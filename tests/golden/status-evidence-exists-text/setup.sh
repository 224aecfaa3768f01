base rsa
mkdir -p "$ROOT/tmp"
echo keep | put "$ROOT/tmp/x.tgz" 0644
