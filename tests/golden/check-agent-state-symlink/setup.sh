base rsa
echo "{\"k8sCertRenewalState\": {\"phase\": \"idle\"}}" | agent_state
mv "$ROOT/var/lib/nvke/node-agent/k8s-cert-renewal-state.json" "$ROOT/var/lib/nvke/node-agent/real.json"
ln -s real.json "$ROOT/var/lib/nvke/node-agent/k8s-cert-renewal-state.json"
