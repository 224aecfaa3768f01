base rsa
phase_legacy renewing none
