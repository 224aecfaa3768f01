base rsa
phase_legacy done none
chmod 0770 "$STATE"
