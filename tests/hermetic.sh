#!/usr/bin/env bash
# The suite is hermetic (tests/README.md, "Hermetic"): the test binaries
# that run the runbook on fixture trees or start simulated nodes give the
# same results when two copies run at once, beside servers on every
# kubeadm default port of this host (what a live node, or a simulated one
# left on the defaults, would have). Run by .ci/run after the suite, on
# binaries it already built.
#   tests/hermetic.sh [TEST...]   (default: golden next_steps shapes live scenarios)
set -euo pipefail
cd "$(dirname "$0")/.."
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(golden next_steps shapes live scenarios)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# Something answers on every default port: TLS-less bytes, then a close.
python3 - <<'PY' &
import socket, threading, time
def serve(family, host, p):
    s = socket.socket(family); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((host, p)); s.listen(64)
    while True:
        c, _ = s.accept(); c.sendall(b"HTTP/1.0 200 OK\r\n\r\nok\n"); c.close()
for p in (6443, 2379, 2380, 2381, 10257, 10259):
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        threading.Thread(target=serve, args=(family, host, p), daemon=True).start()
time.sleep(3600)
PY
# Every stranger must be there: a port taken, or no python3, is no proof.
for _ in $(seq 50); do
  up=0
  for p in 6443 2379 2380 2381 10257 10259; do
    for h in 127.0.0.1 ::1; do
      (exec 3<>"/dev/tcp/$h/$p") 2>/dev/null && up=$((up + 1))
    done
  done
  [ "$up" = 12 ] && break
  sleep 0.1
done
[ "$up" = 12 ] || { echo "hermetic: the servers on the default ports did not all start ($up of 12)"; exit 1; }

args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
run() { cargo test --locked --all-features "${args[@]}" >"$work/$1.log" 2>&1; echo $? >"$work/$1.rc"; }
start=$(date +%s)
run a & run b & wait %2 %3
secs=$(( $(date +%s) - start ))
summary() { grep -E '^test result|^     Running' "$work/$1.log" | sed -E 's/finished in [0-9.]+s//'; }
if [ "$(cat "$work/a.rc")" != 0 ] || [ "$(cat "$work/b.rc")" != 0 ] || ! diff <(summary a) <(summary b) >/dev/null; then
  echo "hermetic: FAILED (two runs side by side, beside servers on the default ports)"
  for r in a b; do echo "--- run $r (exit $(cat "$work/$r.rc"))"; grep -E 'FAILED|panicked|^test result' "$work/$r.log" | head -40; done
  exit 1
fi
n=$(grep -c '^test result' "$work/a.log")
echo "hermetic: ${#tests[@]} test binaries ($n results) twice side by side, beside servers on 6443 2379 2380 2381 10257 10259 (127.0.0.1 and ::1): the same results, in ${secs}s"
