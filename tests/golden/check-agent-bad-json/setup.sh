base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": " | agent_state
