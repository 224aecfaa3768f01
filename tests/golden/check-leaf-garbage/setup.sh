base rsa
echo "garbage" > "$K/pki/etcd/server.crt"
