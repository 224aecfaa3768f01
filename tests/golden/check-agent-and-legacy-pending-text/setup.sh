base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"renewing\", \"operationID\": \"agent-op-3\"}}" | agent_state
phase_v2 op-1 restart_pending etcd
