base rsa
staging_dir
cp "$K/manifests/etcd.yaml" "$K/nvke-cert-renewal-staging/etcd.yaml"
echo "# edited by hand" >> "$K/nvke-cert-renewal-staging/etcd.yaml"
