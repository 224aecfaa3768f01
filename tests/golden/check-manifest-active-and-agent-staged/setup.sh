base rsa
agent_staging_dir
cp "$K/manifests/kube-scheduler.yaml" "$K/nvke-cert-renewal-manifests/"
