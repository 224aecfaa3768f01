base rsa
rm "$K/scheduler.conf"
