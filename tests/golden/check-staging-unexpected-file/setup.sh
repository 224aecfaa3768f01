base rsa
staging_dir
echo "note" > "$K/nvke-cert-renewal-staging/README"
