base rsa
printf '{"k8sCertRenewalState": {"phase": "restart_pending", "operationID": "agent-op-9"}}\n' | agent_state
cp "$K/manifests/kube-apiserver.yaml" "$K/manifests/kube-apiserver.yaml.bak"
cp "$K/manifests/kube-scheduler.yaml" "$K/manifests/kube-scheduler-old.yaml"
