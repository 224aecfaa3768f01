base rsa
phase_legacy done none
