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
# Listeners' ports below the kernel's ephemeral range (as tests/support's
# free_port): a stand-in restarted by a renewal binds its port again, and an
# outgoing connection may have taken it as its source port meanwhile.
PORT_LO=15000
PORT_HI=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
if [ "$((PORT_HI - PORT_LO))" -lt 4096 ]; then PORT_LO=1024 PORT_HI=65536; fi
free_port() {
    local p
    while :; do
        p=$((PORT_LO + (RANDOM * 32768 + RANDOM) % (PORT_HI - PORT_LO)))
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
    # etcd listens on every client URL its manifest gives (as etcd does):
    # the fixture's 10.0.0.11 is not an address of this host, so only the
    # loopback URL is kept (peer URLs not of this host are skipped).
    sed -i "s#--listen-client-urls=https://127.0.0.1:2379,https://10.0.0.11:2379#--listen-client-urls=https://127.0.0.1:$ETCD_PORT#" "$M/etcd.yaml"
    grep -q -- "--listen-client-urls=https://127.0.0.1:$ETCD_PORT\$" "$M/etcd.yaml" || fail "etcd's client URLs not rewritten"
    ln -s "$BIN" "$SIM/bin/crictl"
    ln -s "$BIN" "$SIM/bin/kubeadm"
    # A configured node: crictl finds its endpoint in /etc/crictl.yaml and
    # prints no warnings (the endpoint checks below remove it).
    printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\n' >"$ROOT/etc/crictl.yaml"
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
not_running_id() { ! cri ps -q | grep -q "^$1$"; }
one_etcd() { [ "$(running_id etcd | wc -l)" -eq 1 ]; }
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

ETCDCTL_TLS=(--cacert=/etc/kubernetes/pki/etcd/ca.crt
    --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt
    --key=/etc/kubernetes/pki/etcd/healthcheck-client.key
    --dial-timeout=2s --command-timeout=5s)
# etcdctl ARGS: as the runbook runs it (streaming `crictl exec`), at the
# client URL the etcd manifest gives (the node's etcd answers nowhere else).
etcdctl() { cri exec "$(running_id etcd)" etcdctl --endpoints="https://127.0.0.1:$ETCD_PORT" "${ETCDCTL_TLS[@]}" "$@"; }
# etcdctl_at ENDPOINTS ARGS: the same at other endpoints.
etcdctl_at() { local ep="$1"; shift; cri exec "$(running_id etcd)" etcdctl --endpoints="$ep" "${ETCDCTL_TLS[@]}" "$@"; }
# ms: milliseconds since the epoch.
ms() { echo $(($(date +%s%N) / 1000000)); }

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

# --- pod sandboxes (crictl pods) and the kubelet's annotations
J="$(cri pods -o json --label io.kubernetes.pod.name=etcd-cp-1)"
[ "$(grep -c '"id": "' <<<"$J")" -eq 1 ] || fail "pods --label: one etcd sandbox expected: $J"
SB1="$(grep -o '"id": "[0-9a-f]*"' <<<"$J" | head -1 | cut -d'"' -f4)"
[[ "$SB1" =~ ^[0-9a-f]{64}$ ]] || fail "sandbox ID is not 64 hex: $SB1"
for want in '^{$' '^  "items": \[$' '^      "metadata": {$' '^        "name": "etcd-cp-1",$' \
    "^        \"uid\": \"$UID_WANT\",\$" '^        "namespace": "kube-system",$' '^        "attempt": 0$' \
    '^      "state": "SANDBOX_READY",$' '^      "createdAt": "[0-9]\{19\}",$' '^      "runtimeHandler": ""$' \
    '"component": "etcd"' '"tier": "control-plane"' '"io.kubernetes.pod.name": "etcd-cp-1"' \
    "\"io.kubernetes.pod.uid\": \"$UID_WANT\"" '"io.kubernetes.pod.namespace": "kube-system"' \
    '"kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://10.0.0.11:2379"' \
    "\"kubernetes.io/config.hash\": \"$UID_WANT\"" '"kubernetes.io/config.seen": "20[0-9-]*T[0-9:.]*Z"' \
    '"kubernetes.io/config.source": "file"'; do
    grep -q -- "$want" <<<"$J" || fail "pods -o json lacks $want: $J"
done
J="$(cri ps -o json --label io.kubernetes.container.name=etcd)"
grep -q "\"podSandboxId\": \"$SB1\"" <<<"$J" || fail "the etcd container's podSandboxId is not its sandbox: $J"
for want in '"io.kubernetes.container.hash": "[0-9a-f]\{1,8\}"' '"io.kubernetes.container.restartCount": "0"' \
    '"io.kubernetes.container.terminationMessagePath": "/dev/termination-log"' \
    '"io.kubernetes.container.terminationMessagePolicy": "File"' '"io.kubernetes.pod.terminationGracePeriod": "30"' \
    '"userSpecifiedImage": "registry.k8s.io/etcd:3.5.15-0"' '"image": "sha256:[0-9a-f]\{64\}"'; do
    grep -q -- "$want" <<<"$J" || fail "ps -o json lacks $want: $J"
done
[ "$(cri pods -q | wc -l)" -eq 5 ] || fail "pods -q: 5 static pods expected"
[ "$(cri pods -q --namespace '^kube-sys' --name '^kube-(api|sched)')" != "" ] || fail "pods --namespace/--name regex"
[ "$(cri pods -q --name '^kube-(api|sched)' | wc -l)" -eq 2 ] || fail "pods --name regex count"
[ "$(cri pods -q --name '(' | wc -l)" -eq 0 ] || fail "an invalid --name regex matches nothing"
[ "$(cri pods -q --id "${SB1:0:10}")" = "$SB1" ] || fail "pods --id prefix"
[ "$(cri pods -q -s notready | wc -l)" -eq 0 ] || fail "no NOTREADY sandbox yet"
[ "$(cri pods -q --label component=etcd --label tier=control-plane)" = "$SB1" ] || fail "pods: labels ANDed"
[ -z "$(cri pods -q --label component=etcd --label tier=node)" ] || fail "pods: labels ANDed (none)"
[ "$(cri pods -q --latest | wc -l)" -eq 1 ] && [ "$(cri pods -q -n 2 | wc -l)" -eq 2 ] || fail "pods --latest/--last"
[ "$(cri pods -q -q -o json | grep -c '"id"')" -eq 5 ] || fail "pods: -o json wins over -q"
cri pods | head -1 | grep -q '^POD ID  *CREATED  *STATE  *NAME  *NAMESPACE  *ATTEMPT  *RUNTIME$' || fail "pods table header: $(cri pods | head -1)"
cri pods --no-trunc | grep -q "^$SB1 .* Ready  *etcd-cp-1  *kube-system  *0  *(default)$" || fail "pods table row"
cri pods -o yaml | grep -q '^- annotations:$' || fail "pods -o yaml"
if cri pods -s bogus >/dev/null 2>"$NODE/err"; then fail "pods -s bogus succeeded"; fi
grep -q -- '--state should be ready or notready' "$NODE/err" || fail "pods -s bogus message: $(cat "$NODE/err")"
if cri pods --label a=b=c >/dev/null 2>"$NODE/err"; then fail "a label with two = accepted"; fi
grep -q 'incorrectly specified label: a=b=c' "$NODE/err" || fail "label message: $(cat "$NODE/err")"
cri ps | head -1 | grep -q '  *POD  *NAMESPACE$' || fail "ps table NAMESPACE column"
ok "crictl pods: sandboxes, filters, JSON as crictl prints it; the kubelet's container annotations"

[ "$(readyz)" = 200 ] || fail "readyz is not 200: $(readyz)"
code="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$P/ca.crt" "https://127.0.0.1:$API_PORT/readyz" 2>/dev/null || true)"
[ "$code" != 200 ] || fail "readyz answered without a client certificate"
ok "apiserver /readyz 200 with a client certificate, refused without"

out="$(etcdctl member list -w json)"
grep -q '"member_id":10276657743932975437' <<<"$out" || fail "member list: $out"
grep -q '"name":"cp-1"' <<<"$out" || fail "member list name"
! grep -q isLearner <<<"$out" || fail "isLearner must be omitted for voters"
out="$(etcdctl endpoint health -w json)"
[ "$out" = '[{"endpoint":"https://127.0.0.1:'"$ETCD_PORT"'","health":true,"took":"'"$(sed -E 's/.*"took":"([^"]*)".*/\1/' <<<"$out")"'"}]' ] ||
    fail "endpoint health: $out"
etcdctl endpoint health --cluster -w json | grep -q '"endpoint":"https://10.0.0.11:2379","health":true' || fail "cluster health"
# the product guide's validation command (at the port the etcd manifest gives)
cri exec "$(cri ps --label io.kubernetes.container.name=etcd -q)" etcdctl \
    --endpoints="https://127.0.0.1:$ETCD_PORT" \
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
grep -q 'container \\"0000deadbeef\\" not found' "$NODE/err" || fail "inspect unknown ID message: $(cat "$NODE/err")"
wait_until 5 readyz_is 200 || fail "readyz not back to 200"
ok "etcd restart: EXITED after latency, new ID, same UID, ps -a lists both, readyz 500 -> 200"
J="$(cri pods -o json --label io.kubernetes.pod.name=etcd-cp-1)"
[ "$(grep -c '"id": "' <<<"$J")" -eq 2 ] || fail "two etcd sandboxes expected after the restart: $J"
[ "$(cri pods -q -s notready --label io.kubernetes.pod.name=etcd-cp-1)" = "$SB1" ] || fail "the old sandbox is not NOTREADY"
SB2="$(cri pods -q -s ready --label io.kubernetes.pod.name=etcd-cp-1)"
[ -n "$SB2" ] && [ "$SB2" != "$SB1" ] || fail "no new READY sandbox"
[ "$(grep -o '"id": "[0-9a-f]*"' <<<"$J" | head -1 | cut -d'"' -f4)" = "$SB2" ] || fail "pods not newest first"
grep -q '"attempt": 1' <<<"$J" || fail "the new sandbox's attempt"
[ "$(grep -c "\"uid\": \"$UID_WANT\"" <<<"$J")" -eq 2 ] || fail "both sandboxes have the pod UID"
cri ps -o json --label io.kubernetes.container.name=etcd | grep -q "\"podSandboxId\": \"$SB2\"" || fail "new container in the new sandbox"
cri ps -o json --label io.kubernetes.container.name=etcd | grep -q '"io.kubernetes.container.restartCount": "1"' || fail "restartCount annotation"
ok "sandboxes: one per pod lifetime, NOTREADY after it stopped, attempt counts"

# --- other kube-system pods with a container named etcd
knobs '"apiPods": [{"name": "etcd-backup-29123", "namespace": "kube-system", "containers": ["etcd"], "labels": {"job-name": "etcd-backup-29123"}}]'
two_etcds() { [ "$(running_id etcd | wc -l)" -eq 2 ]; }
wait_until 5 two_etcds || fail "the API pod's etcd container did not start"
J="$(cri pods -o json --name '^etcd-backup')"
grep -q '"kubernetes.io/config.source": "api"' <<<"$J" || fail "API pod sandbox source: $J"
! grep -q 'config.hash' <<<"$J" || fail "an API pod has no config.hash"
grep -q '"job-name": "etcd-backup-29123"' <<<"$J" || fail "API pod labels"
grep -q '"uid": "[0-9a-f]\{8\}-[0-9a-f]\{4\}-4[0-9a-f]\{3\}-8[0-9a-f]\{3\}-[0-9a-f]\{12\}"' <<<"$J" || fail "API pod UID is not a UUID: $J"
APISB="$(cri pods -q --name '^etcd-backup')"
BK="$(cri ps -q --pod "$APISB")"
[ -n "$BK" ] && [ "$BK" != "$ETCD2" ] || fail "ps --pod"
cri inspect "$BK" | grep -q '"pid": 0' || fail "an API pod's container has no process"
[ "$(cri ps -q --label io.kubernetes.pod.namespace=kube-system --label io.kubernetes.container.name=etcd --label io.kubernetes.pod.name=etcd-cp-1)" = "$ETCD2" ] ||
    fail "the static etcd container by its pod-name label"
knobs ''
wait_until 5 not_running_id "$BK" || fail "the API pod did not stop when removed from apiPods"
[ "$(cri pods -q -s notready --name '^etcd-backup')" = "$APISB" ] || fail "API pod sandbox not NOTREADY"
# a second static pod with a container named etcd (on its own port)
COPY_PORT="$(free_port)"
sed -e 's/^  name: etcd$/  name: etcd-copy/' -e "s#https://127.0.0.1:$ETCD_PORT#https://127.0.0.1:$COPY_PORT#" "$M/etcd.yaml" >"$NODE/etcd-copy.yaml"
mv "$NODE/etcd-copy.yaml" "$M/etcd-copy.yaml"
wait_until 5 two_etcds || fail "the etcd-copy static pod did not start"
[ "$(cri pods -q --label io.kubernetes.pod.name=etcd-copy-cp-1 -s ready | wc -l)" -eq 1 ] || fail "etcd-copy sandbox"
cri pods -o json --label io.kubernetes.pod.name=etcd-copy-cp-1 | grep -q '"kubernetes.io/config.source": "file"' || fail "etcd-copy source"
rm "$M/etcd-copy.yaml"
wait_until 5 one_etcd || fail "etcd-copy did not stop"
[ "$(running_id etcd)" = "$ETCD2" ] || fail "the etcd static pod was disturbed by etcd-copy"
ok "apiPods: a kube-system API pod with an etcd container (config.source api); a second static pod etcd-copy"

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
# etcd 3.4 serves no member list to a learner: exit 1, nothing on stdout.
if out="$(etcdctl member list -w json 2>"$NODE/err")"; then fail "selfIsLearner must exit 1"; fi
[ -z "$out" ] || fail "selfIsLearner stdout: $out"
grep -qx 'Error: etcdserver: rpc not supported for learner' "$NODE/err" ||
    fail "selfIsLearner stderr: $(tail -n 2 "$NODE/err")"
knobs '"etcd": {"unhealthy": 1}'
if etcdctl endpoint health -w json >"$NODE/out" 2>/dev/null; then fail "local unhealthy must exit 1"; fi
grep -q '"health":false' "$NODE/out" || fail "local unhealthy JSON"
knobs '"etcd": {"execFails": true}'
if etcdctl member list -w json >/dev/null 2>&1; then fail "execFails"; fi
knobs ''
etcdctl endpoint health -w json >/dev/null || fail "healthy again"
ok "etcd knobs: voters/learners/unhealthy/selfIsLearner/execFails"

# --- etcdctl --endpoints: only what the etcd stand-in serves answers
etcdctl_at "https://localhost:$ETCD_PORT" endpoint health -w json | grep -q '"health":true' || fail "localhost:port"
etcdctl_at https://10.0.0.11:2379 endpoint health -w json | grep -q '"health":true' || fail "member 1's client URL"
t0=$(ms)
set +e
out="$(etcdctl_at https://127.0.0.1:2379 --command-timeout=1s --dial-timeout=3s endpoint health -w json 2>"$NODE/err")"
rc=$?
set -e
t=$(($(ms) - t0))
[ $rc -eq 1 ] || fail "an endpoint nobody listens on must exit 1 (rc $rc)"
[ $t -ge 1000 ] && [ $t -lt 2500 ] || fail "unreachable endpoint: took ${t} ms, not the 1 s --command-timeout"
grep -q '^\[{"endpoint":"https://127.0.0.1:2379","health":false,"took":"1\.[0-9]*s","error":"context deadline exceeded"}\]$' <<<"$out" ||
    fail "unreachable endpoint JSON: $out"
grep -q '"msg":"retrying of unary invoker failed"' "$NODE/err" || fail "the client's retry warning"
grep -q '^Error: unhealthy cluster$' "$NODE/err" || fail "unhealthy cluster: $(cat "$NODE/err")"
grep -q 'command terminated with exit code 1' "$NODE/err" || fail "crictl exec's error for a non-zero exit"
set +e
etcdctl_at https://127.0.0.1:2379 --command-timeout=1s endpoint health >"$NODE/out" 2>"$NODE/err"
set -e
[ ! -s "$NODE/out" ] || fail "simple output: nothing on stdout for an unhealthy endpoint"
grep -q '^https://127.0.0.1:2379 is unhealthy: failed to commit proposal: context deadline exceeded$' "$NODE/err" || fail "simple unhealthy line"
t0=$(ms)
if etcdctl_at "https://127.0.0.1:$API_PORT" --command-timeout=1s member list -w json >"$NODE/out" 2>"$NODE/err"; then
    fail "member list at the apiserver's port"
fi
[ $(($(ms) - t0)) -ge 1000 ] || fail "member list: not the command timeout"
[ ! -s "$NODE/out" ] && grep -q '^Error: context deadline exceeded$' "$NODE/err" || fail "member list unreachable: $(cat "$NODE/err")"
if etcdctl_at http://127.0.0.1:$ETCD_PORT --command-timeout=1s endpoint health --cluster -w json >"$NODE/out" 2>"$NODE/err"; then
    fail "plain http to the TLS port"
fi
grep -q '^Error: failed to fetch endpoints from etcd cluster member list: context deadline exceeded$' "$NODE/err" ||
    fail "cluster health without a reachable endpoint: $(cat "$NODE/err")"
ok "etcdctl --endpoints: unreachable endpoints wait --command-timeout and fail as etcdctl does"

knobs '"etcd": {"voters": 3, "unreachable": 1}'
t0=$(ms)
set +e
out="$(etcdctl --command-timeout=1s endpoint health --cluster -w json 2>"$NODE/err")"
rc=$?
set -e
t=$(($(ms) - t0))
[ $rc -eq 1 ] || fail "unreachable member: exit 1"
[ $t -ge 1000 ] && [ $t -lt 2500 ] || fail "unreachable member: took ${t} ms"
[ "$(grep -o '"health":true' <<<"$out" | wc -l)" -eq 2 ] || fail "two healthy members: $out"
grep -q ',{"endpoint":"https://10.0.0.13:2379","health":false,"took":"1\.[0-9]*s","error":"context deadline exceeded"}\]$' <<<"$out" ||
    fail "the unreachable member last, after the command timeout: $out"
etcdctl member list -w json | grep -q '"name":"cp-3"' || fail "member list with an unreachable member"
knobs ''
ok "etcd.unreachable: endpoint health --cluster waits for the slowest member"

# --- crictl's runtime endpoint (sim.json runtimeEndpoint is the one that answers)
CONTAINERD=unix:///run/containerd/containerd.sock
K3S=unix:///run/k3s/containerd/containerd.sock
DEFAULTS='[unix:///run/containerd/containerd.sock unix:///run/crio/crio.sock unix:///var/run/cri-dockerd.sock]'
mv "$ROOT/etc/crictl.yaml" "$NODE/crictl.yaml"
cri ps -q >"$NODE/out" 2>"$NODE/err" || fail "no endpoint, containerd socket: ps failed: $(cat "$NODE/err")"
[ "$(wc -l <"$NODE/out")" -ge 4 ] || fail "no endpoint: ps listed nothing"
[ "$(wc -l <"$NODE/err")" -eq 3 ] || fail "no endpoint: three warnings expected: $(cat "$NODE/err")"
grep -q "^time=\"[0-9T:-]*Z\" level=warning msg=\"Config \\\\\"/etc/crictl.yaml\\\\\" does not exist, trying next: \\\\\"$SIM/bin/crictl.yaml\\\\\"\"$" "$NODE/err" ||
    fail "config warning: $(cat "$NODE/err")"
grep -qF "level=warning msg=\"runtime connect using default endpoints: $DEFAULTS. As the default settings are now deprecated, you should set the endpoint instead.\"" "$NODE/err" ||
    fail "runtime default-endpoints warning: $(cat "$NODE/err")"
grep -qF "level=warning msg=\"Image connect using default endpoints: $DEFAULTS." "$NODE/err" || fail "image default-endpoints warning"
knobs "\"runtimeEndpoint\": \"unix:///run/crio/crio.sock\""
cri pods -q >/dev/null 2>"$NODE/err" || fail "no endpoint, crio socket: pods failed"
grep -qF 'level=error msg="validate service connection: validate CRI v1 runtime API for endpoint \"unix:///run/containerd/containerd.sock\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\""' "$NODE/err" ||
    fail "the failed containerd default: $(cat "$NODE/err")"
knobs "\"runtimeEndpoint\": \"$K3S\""
t0=$(ms)
if cri ps -q >"$NODE/out" 2>"$NODE/err"; then fail "no endpoint and a non-default socket: ps succeeded"; fi
t=$(($(ms) - t0))
[ $t -lt 1000 ] || fail "crictl with no reachable default took ${t} ms"
[ ! -s "$NODE/out" ] || fail "nothing on stdout"
[ "$(grep -c 'level=error' "$NODE/err")" -eq 3 ] || fail "one error per default endpoint"
tail -1 "$NODE/err" | grep -qF 'level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint \"unix:///var/run/cri-dockerd.sock\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /var/run/cri-dockerd.sock: connect: no such file or directory\""' ||
    fail "the fatal error names cri-dockerd's socket: $(cat "$NODE/err")"
cri -r "$K3S" ps -q >/dev/null 2>"$NODE/err" || fail "-r with the runtime's socket"
[ "$(wc -l <"$NODE/err")" -eq 1 ] && grep -q 'Config ' "$NODE/err" || fail "-r: only the config warning expected: $(cat "$NODE/err")"
cri --runtime-endpoint="$K3S" pods -q >/dev/null 2>&1 || fail "--runtime-endpoint="
env -i CONTAINER_RUNTIME_ENDPOINT="$K3S" "$CRICTL" pods -q >/dev/null 2>&1 || fail "CONTAINER_RUNTIME_ENDPOINT"
env -i CONTAINER_RUNTIME_ENDPOINT=/run/k3s/containerd/containerd.sock "$CRICTL" pods -q >/dev/null 2>&1 || fail "a bare socket path"
t0=$(ms)
if cri -r "$CONTAINERD" pods >/dev/null 2>"$NODE/err"; then fail "-r with a socket nobody serves"; fi
[ $(($(ms) - t0)) -lt 1000 ] || fail "-r unreachable: not at once"
[ "$(tail -1 "$NODE/err")" = "$(tail -1 "$NODE/err" | sed 's/ level=.*//') level=fatal msg=\"validate service connection: validate CRI v1 runtime API for endpoint \\\"$CONTAINERD\\\": rpc error: code = Unavailable desc = connection error: desc = \\\"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\\\"\"" ] ||
    fail "-r unreachable message: $(tail -1 "$NODE/err")"
! grep -q 'default endpoints' "$NODE/err" || fail "-r: no default-endpoint warning"
if env -i CONTAINER_RUNTIME_ENDPOINT="$CONTAINERD" "$CRICTL" -r "$K3S" ps >/dev/null 2>&1; then :; else fail "-r wins over the variable"; fi
if env -i CONTAINER_RUNTIME_ENDPOINT= "$CRICTL" ps >/dev/null 2>"$NODE/err"; then fail "an empty variable"; fi
grep -q 'msg="--runtime-endpoint is not set"' "$NODE/err" || fail "empty endpoint message: $(cat "$NODE/err")"
if cri -r tcp://127.0.0.1:1234 ps >/dev/null 2>"$NODE/err"; then fail "tcp endpoint"; fi
grep -q 'msg="only support unix socket endpoint"' "$NODE/err" || fail "tcp endpoint message"
printf 'runtime-endpoint: %s\ntimeout: 2\n' "$K3S" >"$ROOT/etc/crictl.yaml"
cri ps -q >/dev/null 2>"$NODE/err" || fail "crictl.yaml endpoint"
[ ! -s "$NODE/err" ] || fail "a configured crictl prints no warnings: $(cat "$NODE/err")"
if cri -r "$CONTAINERD" ps >/dev/null 2>&1; then fail "-r wins over crictl.yaml"; fi
printf 'runtime-endpoint: %s\nbogus: 1\n' "$K3S" >"$ROOT/etc/crictl.yaml"
if cri ps >/dev/null 2>"$NODE/err"; then fail "an invalid default crictl.yaml is ignored (defaults tried)"; fi
grep -q 'default endpoints' "$NODE/err" || fail "invalid crictl.yaml: defaults expected"
if cri -c /etc/crictl.yaml ps >/dev/null 2>"$NODE/err"; then fail "-c with an invalid file"; fi
grep -q "msg=\"load config file: Config option 'bogus' is not valid\"" "$NODE/err" || fail "-c invalid: $(cat "$NODE/err")"
if cri -c /etc/nope.yaml ps >/dev/null 2>"$NODE/err"; then fail "-c with a missing file"; fi
grep -qF "msg=\"load config file: stat $SIM/bin/crictl.yaml: no such file or directory\"" "$NODE/err" || fail "-c missing: $(cat "$NODE/err")"
knobs ''
mv "$NODE/crictl.yaml" "$ROOT/etc/crictl.yaml"
cri ps -q >/dev/null 2>"$NODE/err" && [ ! -s "$NODE/err" ] || fail "back to the configured node"
ok "crictl endpoints: defaults with warnings, -r, CONTAINER_RUNTIME_ENDPOINT, crictl.yaml, -c; unreachable fails at once"

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
