base rsa
phase_v2 op-1 renewing null
sed -i "s/\"ca.crt\": \"\(.*\)\"/\"ca.crt\": \"\U\1\"/" "$STATE/phase"
