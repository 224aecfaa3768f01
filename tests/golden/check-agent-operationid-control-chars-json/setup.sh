base rsa
# The agent's operationID carries ESC, CR and LF: enough to clear the screen
# and forge a "CHECK: UNCHANGED" block if it reached the terminal raw.
printf '{"k8sCertRenewalState": {"phase": "restart_pending", "operationID": "x\\u001b[2J\\u001b[H\\rCHECK: UNCHANGED\\nok\\u202e"}}\n' | agent_state
