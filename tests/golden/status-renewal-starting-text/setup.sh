base rsa
hold_lock 5
# A renewal op-8 holds the lock, in its health gate: the phase file is
# still the previous operation's, finished.
owner_file "$(holder_pid)" op-8 renew "$(cat /proc/sys/kernel/random/boot_id)"
phase_v2 op-7 done null
