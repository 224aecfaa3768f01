# Helpers for golden case setup scripts. $ROOT is the node root, $FIX the
# fixtures directory, $CASE the case directory. Sourced with `set -euo pipefail`.

STATE="$ROOT/var/lib/nvke/k8s-cert-renewal"
K="$ROOT/etc/kubernetes"
# CA fingerprints of the rsa fixture (keys of caSHA256).
ca_sha() { sha256sum "$K/pki/$1" | cut -d' ' -f1; }

# Copy a fixture node tree (rsa or ecdsa) with kubeadm's modes.
base() {
  cp -R "$FIX/nodes/$1/." "$ROOT/"
  find "$ROOT" -type d -exec chmod 0755 {} +
  find "$ROOT" -type f -exec chmod 0644 {} +
  find "$ROOT" -name '*.key' -exec chmod 0600 {} +
  chmod 0600 "$K"/*.conf
}

# The runbook's state directory (0700) and its receipts directory.
state_dir() { mkdir -p "$STATE"; chmod 0700 "$STATE"; }
completed_dir() { state_dir; mkdir -p "$STATE/completed"; chmod 0700 "$STATE/completed"; }
staging_dir() { mkdir -p "$K/nvke-cert-renewal-staging"; chmod 0755 "$K/nvke-cert-renewal-staging"; }
agent_staging_dir() { mkdir -p "$K/nvke-cert-renewal-manifests"; chmod 0755 "$K/nvke-cert-renewal-manifests"; }

# Write a file with mode 0600 from stdin.
put() { cat > "$1"; chmod "${2:-0600}" "$1"; }

# A V2 phase file: phase_v2 ID STATE NEXT (NEXT: a component or null).
phase_v2() {
  local next="null"
  [ "$3" != "null" ] && next="\"$3\""
  state_dir
  put "$STATE/phase" <<JSON
{
  "format": "nvke-cert-runbook/phase/v2",
  "operationID": "$1",
  "state": "$2",
  "nextComponent": $next,
  "caSHA256": {
    "ca.crt": "$(ca_sha ca.crt)",
    "etcd/ca.crt": "$(ca_sha etcd/ca.crt)",
    "front-proxy-ca.crt": "$(ca_sha front-proxy-ca.crt)"
  },
  "force": false,
  "thresholdDays": 30,
  "startedAt": "2026-11-29T23:00:00Z",
  "updatedAt": "2026-11-29T23:10:00Z",
  "resumedFrom": null
}
JSON
}

# A legacy five-line phase file: phase_legacy STATE COMPONENT
phase_legacy() {
  state_dir
  printf 'STATE=%s\nCOMPONENT=%s\nSTARTED=1764460800\nCA_SHA256=%s\nPID=4242\n' "$1" "$2" "$(ca_sha ca.crt)" | put "$STATE/phase"
}

# A receipt: receipt ID OUTCOME [PHASE] [a manifest location for all four]
# ($RECEIPT_MORE: further fields, each line starting with a comma)
receipt() {
  completed_dir
  local loc="${4:-active}"
  put "$STATE/completed/$1.json" <<JSON
{
  "format": "nvke-cert-runbook/receipt/v1",
  "operationID": "$1",
  "outcome": "$2",
  "phase": "${3:-done}",
  "message": "fixture receipt",
  "failedComponent": null,
  "manifests": {
    "etcd": "$loc",
    "kube-apiserver": "$loc",
    "kube-controller-manager": "$loc",
    "kube-scheduler": "$loc"
  },
  "finishedAt": "2026-11-29T23:30:00Z",
  "runbookVersion": "0.1.0",
  "caSHA256": {
    "ca.crt": "$(ca_sha ca.crt)",
    "etcd/ca.crt": "$(ca_sha etcd/ca.crt)",
    "front-proxy-ca.crt": "$(ca_sha front-proxy-ca.crt)"
  }${RECEIPT_MORE:-}
}
JSON
}

# A recovery's receipt (SPEC 11) that ended without quorum:
# recovery_receipt ID
recovery_receipt() {
  RECEIPT_MORE=',
  "recovery": true,
  "healthAtEnd": "not healthy yet: local health gate did not pass within 3s (1 attempts): etcd: 1 of 3 voters healthy"' \
    receipt "$1" renewed done
}

# Move a manifest into the runbook's staging directory.
stage() { staging_dir; mv "$K/manifests/$1.yaml" "$K/nvke-cert-renewal-staging/$1.yaml"; }

# The node agent's state file.
agent_state() {
  mkdir -p "$ROOT/var/lib/nvke/node-agent"
  put "$ROOT/var/lib/nvke/node-agent/k8s-cert-renewal-state.json" 0644
}

# The legacy five-line phase text on stdout (to edit before `put`):
# legacy_text STATE COMPONENT
legacy_text() {
  printf 'STATE=%s\nCOMPONENT=%s\nSTARTED=1764460800\nCA_SHA256=%s\nPID=4242\n' "$1" "$2" "$(ca_sha ca.crt)"
}

# A fixed lock owner record: owner_file PID ID MODE [BOOT] (ID "null" for
# none; BOOT defaults to a boot that is not this one).
owner_file() {
  state_dir
  local id="null"
  [ "$2" != "null" ] && id="\"$2\""
  printf '{"pid":%s,"operationID":%s,"mode":"%s","startedAt":"2026-11-29T23:50:00Z","bootID":"%s"}\n' \
    "$1" "$id" "$3" "${4:-00000000-0000-4000-8000-000000000001}" | put "$STATE/owner"
}

# Hold the renewal lock from a detached process (flock(1), not a runbook) for
# SECS seconds. The harness does not wait for it (setsid -f); this returns once
# the lock is held. The holder's pid goes to $HOLDER_PID_FILE (the harness
# shows it as [HOLDER]; holder_pid prints it).
hold_lock() {
  state_dir
  [ -e "$STATE/lock" ] || : | put "$STATE/lock"
  # shellcheck disable=SC2016 # expanded by the holder's own shell
  setsid -f bash -c 'echo $$ > "$0"; exec flock -x "$1" sleep "$2"' \
    "$HOLDER_PID_FILE" "$STATE/lock" "${1:-5}" </dev/null >/dev/null 2>&1
  local i
  for i in $(seq 400); do
    flock -n "$STATE/lock" true || return 0
    sleep 0.025
  done
  echo "hold_lock: the holder never took $STATE/lock" >&2
  return 1
}

# The pid of hold_lock's holder.
holder_pid() { cat "$HOLDER_PID_FILE"; }

# Move a manifest into the node agent's staging directory.
agent_stage() { agent_staging_dir; mv "$K/manifests/$1.yaml" "$K/nvke-cert-renewal-manifests/$1.yaml"; }

# The kubelet's certificates as kubeadm and the kubelet leave them (v1.2):
# kubelet.conf names kubelet-client-current.pem, a symlink to the dated pair
# file; the self-signed serving kubelet.crt. `kubelet_pki CLIENT SERVING
# ROTATE` copies the node's own leaves CLIENT and SERVING (paths under
# pki/) into place; ROTATE is rotateCertificates in config.yaml.
kubelet_pki() {
  local kp="$ROOT/var/lib/kubelet/pki"
  mkdir -p "$kp"
  cat "$K/pki/$1" > "$kp/kubelet-client-2026-01-01-00-00-00.pem"
  chmod 0600 "$kp/kubelet-client-2026-01-01-00-00-00.pem"
  ln -s /var/lib/kubelet/pki/kubelet-client-2026-01-01-00-00-00.pem "$kp/kubelet-client-current.pem"
  cp "$K/pki/$2" "$kp/kubelet.crt"
  printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nrotateCertificates: %s\n' "$3" > "$ROOT/var/lib/kubelet/config.yaml"
  put "$K/kubelet.conf" <<'CONF'
apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://10.0.0.10:6443
  name: default-cluster
contexts:
- context:
    cluster: default-cluster
    namespace: default
    user: default-auth
  name: default-context
current-context: default-context
users:
- name: default-auth
  user:
    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
    client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
CONF
}
