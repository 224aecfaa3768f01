base rsa
echo "not json" | agent_state
phase_v2 op-1 renewing null
