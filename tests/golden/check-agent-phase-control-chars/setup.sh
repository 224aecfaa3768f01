base rsa
printf "{\"k8sCertRenewalState\": {\"phase\": \"renewing\\\\u001b[31m\\\\n\\\\u0000\"}}\n" | agent_state
