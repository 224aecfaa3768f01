base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"restart_pending\", \"operationID\": \"agent-op-2\"}}" | agent_state
