base rsa
stage etcd
rm "$K/pki/apiserver.crt"
phase_legacy done none
chmod 0640 "$STATE/phase"
cp "$K/nvke-cert-renewal-staging/etcd.yaml" "$K/manifests/etcd.yaml.orig"
