base rsa
completed_dir
printf "{\"format\": \"nvke-cert-runbook/receipt/v1\", \"operationID\": \"op-1\", \"outcome\": \"renewed\"}\n" | put "$STATE/completed/op-1.json"
: | put "$STATE/lock"
stage kube-scheduler
