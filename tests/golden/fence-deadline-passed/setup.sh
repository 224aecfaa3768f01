base rsa
# A dead run left kube-apiserver staged: a fence in time would put it
# back and abandon op-1; one after its deadline writes nothing.
phase_v2 op-1 restart_pending kube-apiserver
stage kube-apiserver
