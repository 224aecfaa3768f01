base rsa
phase_v2 op-1 renewing null
completed_dir
printf "{\"format\": \"nvke-cert-runbook/receipt/v1\", \"operationID\": \"op-1\"\n" | put "$STATE/completed/op-1.json"
