base rsa
cp "$FIX/pki-extra/apiserver-not-yet-valid.crt" "$K/pki/apiserver.crt"
