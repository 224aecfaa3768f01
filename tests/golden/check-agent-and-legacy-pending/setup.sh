base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"renewing\", \"operationID\": \"agent-op-3\"}}" | agent_state
phase_legacy restart_pending kube-apiserver
