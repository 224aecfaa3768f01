base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"rolling_back\"}}" | agent_state
