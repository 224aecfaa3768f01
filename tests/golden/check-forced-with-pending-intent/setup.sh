base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"restart_pending\", \"operationID\": \"agent-op-5\"}}" | agent_state
phase_legacy renewing none
