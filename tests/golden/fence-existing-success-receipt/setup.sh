base rsa
receipt op-1 renewed
