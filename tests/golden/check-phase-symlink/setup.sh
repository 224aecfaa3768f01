base rsa
phase_v2 op-1 done null
mv "$STATE/phase" "$STATE/phase.real"
ln -s phase.real "$STATE/phase"
