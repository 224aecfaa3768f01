base rsa
mkdir -p "$ROOT/run/nvke"
echo "{\"k8sCertRenewalState\": {\"phase\": \"renewing\", \"operationID\": \"agent-op-4\"}}" | put "$ROOT/run/nvke/state.json" 0644
