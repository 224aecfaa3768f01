base rsa
rm "$K/super-admin.conf"
