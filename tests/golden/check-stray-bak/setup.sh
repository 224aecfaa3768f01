base rsa
cp "$K/manifests/etcd.yaml" "$K/manifests/etcd.yaml.bak"
