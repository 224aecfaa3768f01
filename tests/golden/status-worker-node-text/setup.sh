base rsa
rm "$K"/manifests/*.yaml
find "$K/pki" -type f ! -name ca.crt -delete
rm -rf "$K/pki/etcd"
