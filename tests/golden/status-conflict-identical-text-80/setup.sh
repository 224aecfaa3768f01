base rsa
staging_dir
cp -p "$K/manifests/kube-apiserver.yaml" "$K/nvke-cert-renewal-staging/kube-apiserver.yaml"
touch -d 2026-11-29T23:00:00Z "$K/manifests/kube-apiserver.yaml" "$K/nvke-cert-renewal-staging/kube-apiserver.yaml"
