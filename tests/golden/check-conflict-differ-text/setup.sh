base rsa
staging_dir
cp "$K/manifests/kube-apiserver.yaml" "$K/nvke-cert-renewal-staging/kube-apiserver.yaml"
sed -i "s/kube-apiserver:v1.31.4/kube-apiserver:v1.31.5/; s/--secure-port=6443/--secure-port=6443\n    - --profiling=false/" "$K/manifests/kube-apiserver.yaml"
touch -d 2026-11-29T22:00:00Z "$K/nvke-cert-renewal-staging/kube-apiserver.yaml"
touch -d 2026-11-29T23:40:00Z "$K/manifests/kube-apiserver.yaml"
