base rsa
staging_dir
cp "$K/manifests/kube-controller-manager.yaml" "$K/nvke-cert-renewal-staging/"
