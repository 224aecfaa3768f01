base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"done\", \"operationID\": \"agent-op-1\"}}" | agent_state
