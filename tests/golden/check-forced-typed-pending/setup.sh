base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"renewing\", \"operationID\": \"agent-op-6\"}}" | agent_state
