base rsa
phase_v2 op-r restart_pending kube-controller-manager
sed -i 's/"resumedFrom": null/"resumedFrom": null,\n  "recovery": true/' "$STATE/phase"
