base rsa
phase_v2 op-1 renewing null
sed -i "s/\"force\": false,/\"force\": false,\n  \"force\": true,/" "$STATE/phase"
