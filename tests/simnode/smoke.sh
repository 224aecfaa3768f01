#!/usr/bin/env bash
# Smoke test of the simulated node (tests/simnode): kubelet, crictl (+etcdctl),
# kubeadm, and the kube-apiserver and etcd stand-ins, on copies of the
# committed fixture nodes, in a temp dir that is removed afterwards.
#
#   cargo build --features sim --bin nvke-simnode
#   bash tests/simnode/smoke.sh "$CARGO_TARGET_DIR/debug/nvke-simnode"
#
# Needs bash, coreutils, openssl (3.x) and curl (falls back to openssl
# s_client without it). Exits non-zero on the first failed check.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 PATH-TO-nvke-simnode" >&2; exit 2; }
BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
[ -x "$BIN" ] || { echo "smoke: $BIN is not executable" >&2; exit 2; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FIX="$HERE/../../fixtures"
T="$(mktemp -d "${TMPDIR:-/tmp}/nvke-simnode-smoke.XXXXXX")"
KUBELET_PID=""

cleanup() {
    local rc=$?
    if [ -n "$KUBELET_PID" ]; then
        kill -TERM "$KUBELET_PID" 2>/dev/null || true
        wait "$KUBELET_PID" 2>/dev/null || true
    fi
    if [ $rc -ne 0 ] && [ -n "${SIM:-}" ] && [ -f "$SIM/kubelet.log" ]; then
        echo "--- last lines of $SIM/kubelet.log" >&2
        tail -n 15 "$SIM/kubelet.log" >&2 || true
    fi
    rm -rf "$T"
    exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok   $*"; }

# wait_until SECONDS CMD...: polls CMD every 50 ms.
wait_until() {
    local secs="$1"; shift
    local i
    for ((i = 0; i < secs * 20; i++)); do
        if "$@"; then return 0; fi
        sleep 0.05
    done
    return 1
}

USED_PORTS=" "
free_port() {
    local p
    while :; do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        case "$USED_PORTS" in *" $p "*) continue ;; esac
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            USED_PORTS="$USED_PORTS$p "
            echo "$p"
            return
        fi
    done
}

# setup ALG: a node root and a simulation directory for fixtures/nodes/ALG.
setup() {
    local alg="$1"
    NODE="$T/$alg"
    ROOT="$NODE/root"
    SIM="$NODE/sim"
    K="$ROOT/etc/kubernetes"
    P="$K/pki"
    M="$K/manifests"
    STAGE="$K/nvke-cert-renewal-staging"
    mkdir -p "$ROOT" "$SIM/bin" "$STAGE"
    cp -R "$FIX/nodes/$alg/." "$ROOT/"
    find "$ROOT" -type d -exec chmod 0755 {} +
    find "$ROOT" -type f -exec chmod 0644 {} +
    find "$ROOT" -name '*.key' -exec chmod 0600 {} +
    chmod 0600 "$K"/*.conf
    API_PORT="$(free_port)"
    ETCD_PORT="$(free_port)"
    sed -i "s/--secure-port=6443/--secure-port=$API_PORT/" "$M/kube-apiserver.yaml"
    sed -i "s#--listen-client-urls=https://127.0.0.1:2379#--listen-client-urls=https://127.0.0.1:$ETCD_PORT#" "$M/etcd.yaml"
    ln -s "$BIN" "$SIM/bin/crictl"
    ln -s "$BIN" "$SIM/bin/kubeadm"
    CRICTL="$SIM/bin/crictl"
    KUBEADM="$SIM/bin/kubeadm"
    knobs ''
}

# knobs JSON-MEMBERS: rewrites sim.json (atomically) with extra members.
knobs() {
    local extra="${1:+, $1}"
    printf '{"root": "%s", "stopLatencyMs": 200, "startLatencyMs": 200%s}\n' "$ROOT" "$extra" >"$SIM/sim.json.tmp"
    mv "$SIM/sim.json.tmp" "$SIM/sim.json"
}

start_kubelet() {
    "$BIN" kubelet --sim "$SIM" 2>"$SIM/kubelet.stderr" &
    KUBELET_PID=$!
}

stop_kubelet() {
    kill -TERM "$KUBELET_PID"
    wait "$KUBELET_PID" || true
    KUBELET_PID=""
}

# The crictl the runbook runs: a cleared environment, found by absolute path.
cri() { env -i "$CRICTL" "$@"; }
kadm() { env -i "$KUBEADM" "$@"; }

running_id() { cri ps -q --label io.kubernetes.pod.namespace=kube-system --label "io.kubernetes.container.name=$1"; }
is_running() { [ -n "$(running_id "$1")" ]; }
not_running() { [ -z "$(running_id "$1")" ]; }
all_running() {
    local c
    for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
        is_running "$c" || return 1
    done
}
id_changed() { local now; now="$(running_id "$1")"; [ -n "$now" ] && [ "$now" != "$2" ]; }

stage() { mv "$M/$1.yaml" "$STAGE/$1.yaml"; }
unstage() { mv "$STAGE/$1.yaml" "$M/$1.yaml"; }

# restart COMPONENT: stage, wait for the container to stop, unstage, wait
# for a new one.
restart() {
    local old
    old="$(running_id "$1")"
    stage "$1"
    wait_until 5 not_running "$1" || fail "$1 did not stop"
    unstage "$1"
    wait_until 5 id_changed "$1" "$old" || fail "$1 did not come back with a new container"
}

# readyz: prints the HTTP status of GET /readyz on the apiserver stand-in,
# as kubernetes-admin (admin.conf's client certificate).
readyz() {
    local d="$NODE/client"
    mkdir -p "$d"
    grep 'client-certificate-data' "$K/admin.conf" | awk '{print $2}' | base64 -d >"$d/admin.crt"
    grep 'client-key-data' "$K/admin.conf" | awk '{print $2}' | base64 -d >"$d/admin.key"
    if command -v curl >/dev/null; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$P/ca.crt" \
            --cert "$d/admin.crt" --key "$d/admin.key" \
            --resolve "kubernetes:$API_PORT:127.0.0.1" "https://kubernetes:$API_PORT/readyz" || true
    else
        printf 'GET /readyz HTTP/1.1\r\nHost: kubernetes\r\nConnection: close\r\n\r\n' |
            timeout 5 openssl s_client -quiet -connect "127.0.0.1:$API_PORT" -servername kubernetes \
                -verify_return_error -verify_hostname kubernetes -CAfile "$P/ca.crt" \
                -cert "$d/admin.crt" -key "$d/admin.key" 2>/dev/null | head -1 | awk '{print $2}'
    fi
}
readyz_is() { [ "$(readyz)" = "$1" ]; }

# served_matches PORT FILE [CLIENT-CERT CLIENT-KEY]: the TLS server on PORT
# presents the certificate in FILE.
served_matches() {
    local served
    served="$(openssl s_client -connect "127.0.0.1:$1" -cert "$3" -key "$4" </dev/null 2>/dev/null |
        openssl x509 -outform DER 2>/dev/null | sha256sum)"
    [ "$served" = "$(openssl x509 -in "$2" -outform DER | sha256sum)" ]
}

ETCDCTL_TLS=(--endpoints=https://127.0.0.1:2379
    --cacert=/etc/kubernetes/pki/etcd/ca.crt
    --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt
    --key=/etc/kubernetes/pki/etcd/healthcheck-client.key
    --dial-timeout=2s --command-timeout=5s)
etcdctl() { cri exec -s --timeout 10 "$(running_id etcd)" etcdctl "${ETCDCTL_TLS[@]}" "$@"; }

LEAVES=(apiserver apiserver-kubelet-client apiserver-etcd-client front-proxy-client
    etcd/server etcd/peer etcd/healthcheck-client)
ca_of() {
    case "$1" in
        apiserver | apiserver-kubelet-client) echo ca ;;
        front-proxy-client) echo front-proxy-ca ;;
        *) echo etcd/ca ;;
    esac
}
pubkey_of_cert() { openssl x509 -in "$1" -noout -pubkey | sha256sum; }
pubkey_of_key() { openssl pkey -in "$1" -pubout | sha256sum; }
pki_sums() { (cd "$K" && find pki -type f -name '*.crt' -o -type f -name '*.key' | sort | xargs sha256sum); }

# ===================================================================== rsa
echo "== rsa node"
setup rsa
start_kubelet
wait_until 10 all_running || fail "the four control-plane containers did not start"
is_running kube-vip || fail "kube-vip did not start"
ok "kubelet started the static pods"

ETCD1="$(running_id etcd)"
[[ "$ETCD1" =~ ^[0-9a-f]{64}$ ]] || fail "container ID is not 64 hex: $ETCD1"
UID_WANT="$(sha256sum "$M/etcd.yaml" | cut -c1-32)"
J="$(cri ps -o json --label io.kubernetes.container.name=etcd)"
grep -q '"io.kubernetes.pod.name": "etcd-cp-1"' <<<"$J" || fail "pod name label: $J"
grep -q '"io.kubernetes.pod.namespace": "kube-system"' <<<"$J" || fail "namespace label"
grep -q "\"io.kubernetes.pod.uid\": \"$UID_WANT\"" <<<"$J" || fail "pod uid label is not sha256(manifest)[:32]"
grep -q '"state": "CONTAINER_RUNNING"' <<<"$J" || fail "state"
cri ps | head -1 | grep -q '^CONTAINER  *IMAGE  *CREATED  *STATE  *NAME  *ATTEMPT  *POD ID  *POD' || fail "table header"
[ "$(cri ps -q --name '^kube-' | wc -l)" -eq 4 ] || fail "--name regex"
ok "labels, IDs, pod UID, table, --name"

[ "$(readyz)" = 200 ] || fail "readyz is not 200: $(readyz)"
code="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$P/ca.crt" "https://127.0.0.1:$API_PORT/readyz" 2>/dev/null || true)"
[ "$code" != 200 ] || fail "readyz answered without a client certificate"
ok "apiserver /readyz 200 with a client certificate, refused without"

out="$(etcdctl member list -w json)"
grep -q '"member_id":10276657743932975437' <<<"$out" || fail "member list: $out"
grep -q '"name":"cp-1"' <<<"$out" || fail "member list name"
! grep -q isLearner <<<"$out" || fail "isLearner must be omitted for voters"
out="$(etcdctl endpoint health -w json)"
[ "$out" = '[{"endpoint":"https://127.0.0.1:2379","health":true,"took":"'"$(sed -E 's/.*"took":"([^"]*)".*/\1/' <<<"$out")"'"}]' ] ||
    fail "endpoint health: $out"
etcdctl endpoint health --cluster -w json | grep -q '"endpoint":"https://10.0.0.11:2379","health":true' || fail "cluster health"
# the product guide's validation command, verbatim
cri exec "$(cri ps --label io.kubernetes.container.name=etcd -q)" etcdctl \
    --endpoints=https://127.0.0.1:2379 \
    --cacert=/etc/kubernetes/pki/etcd/ca.crt \
    --cert=/etc/kubernetes/pki/etcd/server.crt \
    --key=/etc/kubernetes/pki/etcd/server.key \
    --dial-timeout=10s --command-timeout=30s \
    endpoint health --cluster | grep -q '^https://10.0.0.11:2379 is healthy: successfully committed proposal: took = ' ||
    fail "the guide's etcdctl command"
if cri exec -s "$ETCD1" etcdctl --cacert=/etc/kubernetes/pki/ca.crt endpoint health >/dev/null 2>&1; then
    fail "etcdctl saw a file outside the etcd container's mounts"
fi
if cri exec -s "$ETCD1" etcdctl endpoint status >/dev/null 2>&1; then fail "unsupported command accepted"; fi
if cri exec -s "$(running_id kube-scheduler)" etcdctl member list >/dev/null 2>&1; then
    fail "etcdctl ran in the scheduler container"
fi
ok "crictl exec etcdctl member list / endpoint health"

# --- restart etcd by moving its manifest
stage etcd
sleep 0.05
[ "$(running_id etcd)" = "$ETCD1" ] || fail "etcd stopped before stopLatencyMs"
wait_until 5 not_running etcd || fail "etcd did not stop"
cri ps -a -q --label io.kubernetes.container.name=etcd --state exited | grep -q "$ETCD1" || fail "old etcd not EXITED"
wait_until 5 readyz_is 500 || fail "readyz not 500 without etcd: $(readyz)"
if cri exec -s "$ETCD1" etcdctl member list >/dev/null 2>&1; then fail "exec into an exited container"; fi
unstage etcd
wait_until 5 id_changed etcd "$ETCD1" || fail "etcd did not come back"
ETCD2="$(running_id etcd)"
J="$(cri ps -a -o json --label io.kubernetes.pod.namespace=kube-system --label io.kubernetes.container.name=etcd)"
[ "$(grep -c '"id": "' <<<"$J")" -eq 2 ] || fail "ps -a should list both etcd containers: $J"
[ "$(grep -o '"id": "[0-9a-f]*"' <<<"$J" | head -1)" = "\"id\": \"$ETCD2\"" ] || fail "not newest first"
[ "$(grep -c "\"io.kubernetes.pod.uid\": \"$UID_WANT\"" <<<"$J")" -eq 2 ] || fail "pod UID changed across the restart"
grep -q '"attempt": 1' <<<"$J" || fail "attempt of the new container"
cri inspect "$ETCD1" | grep -q '"state": "CONTAINER_EXITED"' || fail "inspect exited"
cri inspect "$ETCD2" | grep -q '"pid": [1-9]' || fail "inspect pid"
if cri inspect 0000deadbeef >/dev/null 2>"$NODE/err"; then fail "inspect of an unknown ID succeeded"; fi
grep -q 'container "0000deadbeef" not found' "$NODE/err" || fail "inspect unknown ID message: $(cat "$NODE/err")"
wait_until 5 readyz_is 200 || fail "readyz not back to 200"
ok "etcd restart: EXITED after latency, new ID, same UID, ps -a lists both, readyz 500 -> 200"

# --- etcd knobs
knobs '"etcd": {"voters": 3, "learners": 1, "unhealthy": 1}'
set +e
out="$(etcdctl endpoint health --cluster -w json 2>"$NODE/err")"
rc=$?
set -e
[ $rc -eq 1 ] || fail "unhealthy cluster must exit 1"
grep -q 'Error: unhealthy cluster' "$NODE/err" || fail "unhealthy cluster stderr"
[ "$(grep -o '"endpoint"' <<<"$out" | wc -l)" -eq 4 ] || fail "4 members expected: $out"
[ "$(grep -o '"health":false' <<<"$out" | wc -l)" -eq 1 ] || fail "1 unhealthy expected: $out"
grep -q '"endpoint":"https://10.0.0.14:2379","health":false,"took":"[^"]*","error":"context deadline exceeded"' <<<"$out" ||
    fail "last member unhealthy: $out"
out="$(etcdctl member list -w json)"
[ "$(grep -o '"ID":' <<<"$out" | wc -l)" -eq 4 ] || fail "member list count"
[ "$(grep -o '"isLearner":true' <<<"$out" | wc -l)" -eq 1 ] || fail "one learner"
knobs '"etcd": {"selfIsLearner": true}'
out="$(etcdctl member list -w json)"
grep -q '{"ID":10276657743932975437,"peerURLs":\["https://10.0.0.11:2380"\],"clientURLs":\["https://10.0.0.11:2379"\],"isLearner":true}' <<<"$out" ||
    fail "selfIsLearner: $out"
knobs '"etcd": {"unhealthy": 1}'
if etcdctl endpoint health -w json >"$NODE/out" 2>/dev/null; then fail "local unhealthy must exit 1"; fi
grep -q '"health":false' "$NODE/out" || fail "local unhealthy JSON"
knobs '"etcd": {"execFails": true}'
if etcdctl member list -w json >/dev/null 2>&1; then fail "execFails"; fi
knobs ''
etcdctl endpoint health -w json >/dev/null || fail "healthy again"
ok "etcd knobs: voters/learners/unhealthy/selfIsLearner/execFails"

# --- kubelet knobs
knobs '"neverStop": ["kube-scheduler"]'
SCHED="$(running_id kube-scheduler)"
stage kube-scheduler
sleep 0.6
[ "$(running_id kube-scheduler)" = "$SCHED" ] || fail "neverStop: the scheduler stopped"
unstage kube-scheduler
sleep 0.6
[ "$(running_id kube-scheduler)" = "$SCHED" ] || fail "neverStop: a second scheduler"
knobs '"neverStart": ["kube-controller-manager"]'
KCM="$(running_id kube-controller-manager)"
stage kube-controller-manager
wait_until 5 not_running kube-controller-manager || fail "kcm did not stop"
unstage kube-controller-manager
sleep 0.6
not_running kube-controller-manager || fail "neverStart: kcm started"
knobs ''
wait_until 5 id_changed kube-controller-manager "$KCM" || fail "kcm did not start after neverStart was cleared"
ok "neverStop, neverStart"

# --- kubeadm
BEFORE="$(pki_sums)"
if kadm certs renew all >"$NODE/out" 2>&1; then fail "kubeadm ran without --rootfs"; fi
grep -q 'rootfs' "$NODE/out" || fail "refusal message"
[ "$(pki_sums)" = "$BEFORE" ] || fail "kubeadm without --rootfs changed files"
if kadm certs renew all --config /etc/kubernetes/nope.yaml --rootfs "$ROOT" >"$NODE/out" 2>&1; then
    fail "kubeadm with a missing --config"
fi
grep -q 'config not found' "$NODE/out" || fail "missing config message"
ok "kubeadm refuses without --rootfs and with a missing --config"

OLD_APISERVER_END="$(openssl x509 -in "$P/apiserver.crt" -noout -enddate)"
printf 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n' >"$K/kubeadm.yaml"
kadm certs renew all --config /etc/kubernetes/kubeadm.yaml --rootfs "$ROOT" >"$NODE/out" || fail "kubeadm renew: $(cat "$NODE/out")"
grep -q '^certificate for serving the Kubernetes API renewed$' "$NODE/out" || fail "kubeadm output"
grep -q '^Done renewing certificates' "$NODE/out" || fail "kubeadm final line"
for l in "${LEAVES[@]}"; do
    openssl verify -CAfile "$P/$(ca_of "$l").crt" "$P/$l.crt" >/dev/null || fail "$l does not verify"
    [ "$(pubkey_of_cert "$P/$l.crt")" = "$(pubkey_of_key "$P/$l.key")" ] || fail "$l key mismatch"
    [ "$(stat -c %a "$P/$l.key")" = 600 ] || fail "$l.key mode"
    [ "$(stat -c %a "$P/$l.crt")" = 644 ] || fail "$l.crt mode"
    head -1 "$P/$l.key" | grep -q 'BEGIN RSA PRIVATE KEY' || fail "$l.key is not PKCS#1"
done
[ "$(openssl x509 -in "$P/apiserver.crt" -noout -enddate)" != "$OLD_APISERVER_END" ] || fail "dates unchanged"
openssl x509 -in "$P/apiserver.crt" -noout -ext subjectAltName | grep -q 'DNS:kubernetes.default.svc.cluster.local' || fail "SANs lost"
openssl x509 -in "$P/apiserver-kubelet-client.crt" -noout -subject | grep -q 'O = kubeadm:cluster-admins, CN = kube-apiserver-kubelet-client' || fail "subject lost"
for c in admin controller-manager scheduler super-admin; do
    grep 'client-certificate-data' "$K/$c.conf" | awk '{print $2}' | base64 -d >"$NODE/kc.crt"
    openssl verify -CAfile "$P/ca.crt" "$NODE/kc.crt" >/dev/null || fail "$c.conf cert does not verify"
    [ "$(openssl x509 -in "$NODE/kc.crt" -noout -enddate)" != "notAfter=Jun  1 00:00:00 2027 GMT" ] || fail "$c.conf not renewed"
    [ "$(stat -c %a "$K/$c.conf")" = 600 ] || fail "$c.conf mode"
    grep -q 'server: https://10.0.0.11:6443' "$K/$c.conf" || fail "$c.conf lost its server"
done
grep -q "certs renew all --config /etc/kubernetes/kubeadm.yaml --rootfs $ROOT" "$SIM/kubeadm.log" || fail "kubeadm.log"
ok "kubeadm certs renew all: every leaf renewed, verifies, matches its key, modes kept"

# the stand-ins load certificates at start: restart them, they serve the new ones
d="$NODE/client"
served_matches "$API_PORT" "$P/apiserver.crt" "$d/admin.crt" "$d/admin.key" && fail "apiserver serves the new cert before a restart"
restart etcd
restart kube-apiserver
wait_until 5 readyz_is 200 || fail "readyz after renewal: $(readyz)"
served_matches "$API_PORT" "$P/apiserver.crt" "$d/admin.crt" "$d/admin.key" || fail "apiserver does not serve the renewed cert"
served_matches "$ETCD_PORT" "$P/etcd/server.crt" "$P/etcd/healthcheck-client.crt" "$P/etcd/healthcheck-client.key" ||
    fail "etcd does not serve the renewed cert"
ok "restarted etcd and kube-apiserver serve the renewed certificates; readyz 200"

# --- kubeadm fault knobs
cp -a "$P" "$NODE/pki.good"
knobs '"kubeadm": {"failHalfway": true}'
BEFORE="$(cd "$P" && sha256sum ./*.crt ./*.key etcd/*.crt etcd/*.key)"
if kadm certs renew all --rootfs "$ROOT" >"$NODE/out" 2>&1; then fail "failHalfway exited 0"; fi
changed=0
for l in "${LEAVES[@]}"; do
    grep -q "$(sha256sum "$P/$l.crt" | cut -d' ' -f1)" <<<"$BEFORE" || changed=$((changed + 1))
done
[ $changed -eq 3 ] || fail "failHalfway renewed $changed PEM leaves, not 3"
ok "kubeadm failHalfway: 3 of 7 PEM leaves renewed, exit 1"

knobs '"kubeadm": {"changeCA": true}'
OLD_CA="$(sha256sum <"$P/ca.crt")"
kadm certs renew all --rootfs "$ROOT" >/dev/null || fail "changeCA run failed"
[ "$(sha256sum <"$P/ca.crt")" != "$OLD_CA" ] || fail "changeCA: ca.crt unchanged"
[ "$(openssl x509 -in "$P/ca.crt" -noout -subject)" = "subject=CN = kubernetes" ] || fail "changeCA: subject"
openssl verify -CAfile "$P/ca.crt" "$P/ca.crt" >/dev/null || fail "changeCA: not self-signed"
if openssl verify -CAfile "$P/ca.crt" "$P/apiserver.crt" >/dev/null 2>&1; then fail "changeCA: leaves still verify"; fi
[ "$(pubkey_of_cert "$P/ca.crt")" = "$(pubkey_of_key "$P/ca.key")" ] || fail "changeCA: ca.key does not match"
rm -rf "$P" && cp -a "$NODE/pki.good" "$P"
ok "kubeadm changeCA"

knobs '"kubeadm": {"keyMismatch": true}'
kadm certs renew all --rootfs "$ROOT" >/dev/null || fail "keyMismatch run failed"
[ "$(pubkey_of_cert "$P/apiserver.crt")" != "$(pubkey_of_key "$P/apiserver.key")" ] || fail "keyMismatch: key matches"
openssl verify -CAfile "$P/ca.crt" "$P/apiserver.crt" >/dev/null || fail "keyMismatch: cert should still verify"
knobs ''
API1="$(running_id kube-apiserver)"
stage kube-apiserver
wait_until 5 not_running kube-apiserver || fail "apiserver did not stop"
unstage kube-apiserver
sleep 1.5
not_running kube-apiserver || fail "an apiserver with a mismatched key must not run"
[ "$(cri ps -a -q --label io.kubernetes.container.name=kube-apiserver --state exited | wc -l)" -ge 2 ] ||
    fail "no crashed apiserver container"
rm -rf "$P" && cp -a "$NODE/pki.good" "$P"
wait_until 15 id_changed kube-apiserver "$API1" || fail "apiserver did not recover after the key was fixed"
wait_until 5 readyz_is 200 || fail "readyz after recovery"
ok "kubeadm keyMismatch; the apiserver stand-in crash-loops on it and recovers"

knobs '"kubeadm": {"hangSecs": 5}'
start=$SECONDS
set +e
timeout 1 env -i "$KUBEADM" certs renew all --rootfs "$ROOT" >/dev/null 2>&1
rc=$?
set -e
[ $rc -eq 124 ] || fail "hangSecs: kubeadm was not still running after 1 s (rc $rc)"
[ $((SECONDS - start)) -lt 4 ] || fail "timeout took too long"
knobs ''
ok "kubeadm hangSecs"

# --- kubelet shutdown
APIPID="$(cri inspect "$(running_id kube-apiserver)" | grep '"pid"' | tr -dc 0-9)"
stop_kubelet
! kill -0 "$APIPID" 2>/dev/null || fail "apiserver stand-in survived the kubelet"
[ -z "$(cri ps -q)" ] || fail "containers still RUNNING after kubelet shutdown"
ok "kubelet SIGTERM stops its processes"

# =================================================================== ecdsa
echo "== ecdsa node"
setup ecdsa
# tlsNow after the fixture leaves expire: the stand-ins reject them.
knobs '"tlsNow": "2027-07-01T00:00:00Z"'
start_kubelet
wait_until 10 all_running || fail "ecdsa: containers did not start"
sleep 0.3
[ "$(readyz)" != 200 ] || fail "tlsNow: the apiserver accepted an expired client certificate"
if etcdctl endpoint health -w json >/dev/null 2>&1; then fail "tlsNow: etcd accepted an expired client certificate"; fi
knobs '"tlsNow": "2026-11-30T00:00:00Z"'
restart etcd
restart kube-apiserver
ok "tlsNow: certificates checked as of sim.json's time"
wait_until 5 readyz_is 200 || fail "ecdsa: readyz $(readyz)"
etcdctl endpoint health -w json | grep -q '"health":true' || fail "ecdsa: etcd health"
kadm certs renew all --rootfs "$ROOT" >/dev/null || fail "ecdsa: kubeadm"
for l in "${LEAVES[@]}"; do
    openssl verify -CAfile "$P/$(ca_of "$l").crt" "$P/$l.crt" >/dev/null || fail "ecdsa: $l does not verify"
    head -1 "$P/$l.key" | grep -q 'BEGIN EC PRIVATE KEY' || fail "ecdsa: $l.key is not SEC1"
    [ "$(pubkey_of_cert "$P/$l.crt")" = "$(pubkey_of_key "$P/$l.key")" ] || fail "ecdsa: $l key mismatch"
done
grep 'client-key-data' "$K/admin.conf" | awk '{print $2}' | base64 -d | head -1 | grep -q 'EC PRIVATE KEY' || fail "ecdsa: admin.conf key"
restart etcd
restart kube-apiserver
wait_until 5 readyz_is 200 || fail "ecdsa: readyz after renewal"
etcdctl endpoint health -w json | grep -q '"health":true' || fail "ecdsa: etcd health after renewal"
stop_kubelet
ok "ecdsa: start, renew, restart, healthy"

echo "simnode smoke: all checks passed"
