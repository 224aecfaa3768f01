base rsa
for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do stage $c; done
echo x > "$K/nvke-cert-renewal-staging/etcd.yaml.orig"
agent_staging_dir
echo x > "$K/nvke-cert-renewal-manifests/leftover"
state_dir
legacy_text restart_pending etcd | sed "s/^PID=.*/PID=0/" | put "$STATE/phase"
