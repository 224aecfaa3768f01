base rsa
agent_staging_dir
echo x > "$K/nvke-cert-renewal-manifests/leftover.txt"
