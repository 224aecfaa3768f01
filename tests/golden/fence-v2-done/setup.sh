base rsa
phase_v2 op-9 done null
receipt op-9 renewed
