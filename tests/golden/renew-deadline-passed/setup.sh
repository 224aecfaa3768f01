base rsa
# Another operation left unfinished work: a run with time left would
# resume it (and record superseded for op-old); a late one touches nothing.
phase_v2 op-old restart_pending kube-apiserver
