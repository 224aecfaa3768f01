base rsa
receipt op-1 renewed
chmod 0777 "$STATE/completed"
