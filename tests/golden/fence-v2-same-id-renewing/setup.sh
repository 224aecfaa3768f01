base rsa
phase_v2 op-1 renewing null
