base rsa
mv "$K/manifests/etcd.yaml" "$K/etcd.yaml"
ln -s ../etcd.yaml "$K/manifests/etcd.yaml"
