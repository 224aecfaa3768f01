base rsa
agent_stage etcd
