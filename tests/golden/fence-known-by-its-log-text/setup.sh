base rsa
# cycle-7 was killed before its first phase write (in its health gate):
# only its log says it ran.
phase_v2 op-6 done null
mkdir -p "$STATE/log"; chmod 0700 "$STATE/log"
echo 'health gate: waiting for etcd' > "$STATE/log/cycle-7.log"; chmod 0600 "$STATE/log/cycle-7.log"
