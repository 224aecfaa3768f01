base rsa
# kube-scheduler's manifest is out of manifests/ (its pod down), and the
# staged copy is a symlink (refused): exit 4, and no step moves it.
staging_dir
mv "$K/manifests/kube-scheduler.yaml" "$ROOT/sched.yaml"
ln -s "$ROOT/sched.yaml" "$K/nvke-cert-renewal-staging/kube-scheduler.yaml"
