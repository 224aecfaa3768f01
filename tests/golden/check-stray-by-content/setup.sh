base rsa
cp "$K/manifests/kube-apiserver.yaml" "$K/manifests/apiserver-copy.yaml"
