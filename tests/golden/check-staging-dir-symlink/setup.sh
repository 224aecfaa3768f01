base rsa
mkdir -p "$K/elsewhere"
ln -s elsewhere "$K/nvke-cert-renewal-staging"
