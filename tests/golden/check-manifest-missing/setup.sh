base rsa
rm "$K/manifests/kube-scheduler.yaml"
