base rsa
rm "$K/pki/front-proxy-client.crt"
