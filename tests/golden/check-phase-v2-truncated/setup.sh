base rsa
phase_v2 op-1 renewing null
head -c 120 "$STATE/phase" > "$STATE/.cut"
put "$STATE/phase" < "$STATE/.cut"
rm "$STATE/.cut"
