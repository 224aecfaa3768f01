base rsa
cp "$FIX/pki-extra/apiserver-foreign.crt" "$K/pki/apiserver.crt"
