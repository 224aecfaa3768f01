base rsa
agent_stage kube-scheduler
