base rsa
phase_v2 op-1 renewing null
sed -i "s/\"resumedFrom\": null/\"resumedFrom\": null,\n  \"retries\": 3/" "$STATE/phase"
