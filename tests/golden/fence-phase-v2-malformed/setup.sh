base rsa
phase_v2 op-1 restart_pending etcd
sed -i "s/\"force\": false/\"force\": \"no\"/" "$STATE/phase"
: | put "$STATE/lock"
