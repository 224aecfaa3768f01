base rsa
hold_lock 5
# The holder's own pid on this boot: the owner record is the holder's.
owner_file "$(holder_pid)" op-7 renew "$(cat /proc/sys/kernel/random/boot_id)"
phase_v2 op-7 restart_pending kube-apiserver
stage kube-apiserver
