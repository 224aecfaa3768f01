base rsa
cp "$K/manifests/etcd.yaml" "$K/manifests/.etcd.yaml.swp"
mkdir "$K/manifests/old"
cp "$K/manifests/etcd.yaml" "$K/manifests/old/etcd.yaml"
echo "not yaml: [" > "$K/manifests/notes.yaml"
