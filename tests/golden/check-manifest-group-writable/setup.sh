base rsa
chmod 0664 "$K/manifests/kube-apiserver.yaml"
