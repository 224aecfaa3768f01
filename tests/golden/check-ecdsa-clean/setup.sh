base ecdsa
