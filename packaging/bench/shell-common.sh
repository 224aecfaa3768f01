# shellcheck shell=bash disable=SC2034
# (SC2034: the variables set here are read by the scripts that source it.)
# Sourced by shell-check.sh and shell-status.sh: the read-only inspection an
# SRE's shell runbook does on a kubeadm control-plane node, written the way a
# careful person would write it (bash builtins for reading and matching small
# files, one external process where the shell has no builtin: openssl for
# certificates, date for date arithmetic, sha256sum, flock, stat, grep, ls).
#
# It is the baseline of packaging/bench/run, not a product: it looks at the
# same files as `nvke-cert-runbook --check` / `--status-only` (SPEC sections 5
# and 6) and reaches the same decision on ordinary nodes, but it parses JSON
# with regular expressions and does not verify certificate signatures.
#
# Inputs (set by the sourcing script): ROOT (node root, "" for /),
# THRESHOLD_DAYS, NOW_RFC3339 (empty: the real clock), AGENT_STATE ("" or a
# node path).

K="$ROOT/etc/kubernetes"
S="$ROOT/var/lib/nvke/k8s-cert-renewal"
MANIFESTS="$K/manifests"
STAGING="$K/nvke-cert-renewal-staging"
AGENT_STAGING="$K/nvke-cert-renewal-manifests"
AGENT_DEFAULT="/var/lib/nvke/node-agent/k8s-cert-renewal-state.json"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
# name|path under /etc/kubernetes|kind (pem, conf, conf-optional)|CA name
LEAVES=(
  "apiserver|pki/apiserver.crt|pem|ca"
  "apiserver-kubelet-client|pki/apiserver-kubelet-client.crt|pem|ca"
  "apiserver-etcd-client|pki/apiserver-etcd-client.crt|pem|etcd-ca"
  "front-proxy-client|pki/front-proxy-client.crt|pem|front-proxy-ca"
  "etcd-server|pki/etcd/server.crt|pem|etcd-ca"
  "etcd-peer|pki/etcd/peer.crt|pem|etcd-ca"
  "etcd-healthcheck-client|pki/etcd/healthcheck-client.crt|pem|etcd-ca"
  "admin.conf|admin.conf|conf|ca"
  "super-admin.conf|super-admin.conf|conf-optional|ca"
  "controller-manager.conf|controller-manager.conf|conf|ca"
  "scheduler.conf|scheduler.conf|conf|ca"
)
# name|path under /etc/kubernetes/pki
CAS=("ca|ca.crt" "etcd-ca|etcd/ca.crt" "front-proxy-ca|front-proxy-ca.crt")

NL=$'\n'
FAILURES=()  # "code|text": check failures / reasons the node is not clean
WARNINGS=()

fail() { FAILURES+=("$1|$2"); }
warn() { WARNINGS+=("$1"); }
# The node path of a path under ROOT, as an operator sees it.
nodepath() { printf '%s' "/${1#"$ROOT"/}"; }

# slurp VAR FILE: the whole (small) file into VAR, without a subprocess.
slurp() {
  local -n _slurp_into=$1
  _slurp_into=""
  IFS= read -r -d '' _slurp_into <"$2" || true
}

# json_str VAR KEY TEXT: VAR = the string value of "KEY": "..." in TEXT
# (regular expressions, not a JSON parser; returns 1 when absent).
json_str() {
  local -n _json_into=$1
  local re
  printf -v re '"%s"[[:space:]]*:[[:space:]]*"([^"]*)"' "$2"
  if [[ $3 =~ $re ]]; then
    _json_into=${BASH_REMATCH[1]}
  else
    _json_into=""
    return 1
  fi
}

now_epoch() {
  if [ -n "${NOW_RFC3339:-}" ]; then
    NOW=$(date -u -d "$NOW_RFC3339" +%s)
  else
    NOW=$(date -u +%s)
  fi
}

# --- type, owner and mode of the state and manifest paths: one stat call ---
declare -A STAT_TYPE=() STAT_MODE=() STAT_UID=()
stat_paths() {
  local p paths=() line name rest
  for p in "$S" "$S/completed" "$S/lock" "$S/owner" "$S/phase" \
    "$MANIFESTS" "$STAGING" "$AGENT_STAGING"; do
    [ -e "$p" ] || [ -L "$p" ] && paths+=("$p")
  done
  for p in "${COMPONENTS[@]}"; do
    for d in "$MANIFESTS" "$STAGING" "$AGENT_STAGING"; do
      [ -e "$d/$p.yaml" ] || [ -L "$d/$p.yaml" ] && paths+=("$d/$p.yaml")
    done
  done
  [ "${#paths[@]}" -gt 0 ] || return 0
  while IFS= read -r line; do
    name=${line%%|*}
    rest=${line#*|}
    STAT_TYPE[$name]=${rest%%|*}
    rest=${rest#*|}
    STAT_MODE[$name]=${rest%%|*}
    STAT_UID[$name]=${rest#*|}
  done < <(stat -c '%n|%F|%a|%u' -- "${paths[@]}")
}

# vet PATH KIND (file|dir): refuse a symlink, the wrong type, a group- or
# world-writable mode, or (as root) another owner. Prints the reason.
vet() {
  local t=${STAT_TYPE[$1]:-} want
  [ -n "$t" ] || return 0
  case $2 in file) want="regular file" ;; dir) want="directory" ;; esac
  if [ "$t" = "symbolic link" ]; then
    printf '%s is a symlink: refused' "$(nodepath "$1")"
    return 1
  fi
  if [ "${t#regular empty file}" != "$t" ]; then t="regular file"; fi
  if [ "$t" != "$want" ]; then
    printf '%s is a %s, expected a %s' "$(nodepath "$1")" "$t" "$want"
    return 1
  fi
  if (((8#${STAT_MODE[$1]}) & 8#022)); then
    printf '%s is writable by group or others (mode %s): refused' "$(nodepath "$1")" "${STAT_MODE[$1]}"
    return 1
  fi
  if [ "$EUID" = 0 ] && [ "${STAT_UID[$1]}" != 0 ]; then
    printf '%s is owned by uid %s, not root: refused' "$(nodepath "$1")" "${STAT_UID[$1]}"
    return 1
  fi
}

# --- the state directory, the lock and its owner ---
STATE_OK=0
LOCK_DESC="free (no lock file yet)"
LOCK_HELD=0
inspect_state() {
  local why
  if [ ! -e "$S" ] && [ ! -L "$S" ]; then return 0; fi
  if ! why=$(vet "$S" dir); then fail state "state: $why"; return 0; fi
  STATE_OK=1
  if [ -e "$S/lock" ] || [ -L "$S/lock" ]; then
    if ! why=$(vet "$S/lock" file); then fail state "state: $why"; return 0; fi
    local fd
    exec {fd}<"$S/lock"
    if flock -n "$fd"; then
      LOCK_DESC="free"
    else
      LOCK_HELD=1
      LOCK_DESC="held by $(owner_desc)"
      fail busy "busy: the renewal lock is held by $(owner_desc)"
    fi
    exec {fd}<&-
  fi
}

owner_desc() {
  local o pid mode id since
  if [ ! -f "$S/owner" ]; then
    echo "an unknown process (no owner file)"
    return
  fi
  slurp o "$S/owner"
  if json_str mode mode "$o" && [[ $o =~ \"pid\"[[:space:]]*:[[:space:]]*([0-9]+) ]]; then
    pid=${BASH_REMATCH[1]}
    json_str id operationID "$o" || id=none
    json_str since startedAt "$o" || true
    echo "pid $pid ($mode, operation $id, since $since)"
  else
    echo "an unknown process (owner file says \"${o//[$'\n\r\t']/ }\")"
  fi
}

# --- the phase file, judged as a renewal would judge it ---
# PHASE_INTENT: absent, done, done-by-receipt, pending, malformed
PHASE_INTENT=absent
PHASE_DESC=absent
inspect_phase() {
  local p="$S/phase" txt why
  [ "$STATE_OK" = 1 ] || return 0
  [ -e "$p" ] || [ -L "$p" ] || return 0
  if ! why=$(vet "$p" file); then
    PHASE_INTENT=malformed PHASE_DESC="malformed: $why"
    fail phase-file "phase file: $why"
    return 0
  fi
  slurp txt "$p"
  if [ "${txt:0:1}" = "{" ]; then
    phase_v2 "$txt"
  else
    phase_legacy "$txt"
  fi
}

phase_malformed() {
  PHASE_INTENT=malformed PHASE_DESC="malformed: $1"
  fail phase-file "phase file: $(nodepath "$S/phase"): $1"
}

phase_legacy() {
  local re st comp
  re="^STATE=([a-z_]+)${NL}COMPONENT=([a-z-]+)${NL}STARTED=([0-9]+)${NL}CA_SHA256=([0-9a-f]{64})${NL}PID=([0-9]+)${NL}\$"
  if ! [[ $1 =~ $re ]]; then
    phase_malformed "not the legacy five-line format"
    return
  fi
  st=${BASH_REMATCH[1]} comp=${BASH_REMATCH[2]}
  case "$st/$comp" in
    renewing/none | done/none | restart_pending/none | restart_pending/etcd | \
      restart_pending/kube-apiserver | restart_pending/kube-controller-manager | \
      restart_pending/kube-scheduler) ;;
    *) phase_malformed "invalid STATE/COMPONENT pair $st/$comp"; return ;;
  esac
  PHASE_DESC="legacy five-line (pid ${BASH_REMATCH[5]}) $st"
  [ "$comp" = none ] || PHASE_DESC+=" next=$comp"
  if [ "$st" = "done" ]; then
    PHASE_INTENT="done"
  else
    PHASE_INTENT=pending
    PHASE_DESC+=" (unfinished: the next renewal resumes it)"
  fi
}

phase_v2() {
  local txt=$1 format id st next="" r rid outcome
  json_str format format "$txt" || true
  if [ "$format" != "nvke-cert-runbook/phase/v2" ]; then
    phase_malformed "format is \"$format\", expected \"nvke-cert-runbook/phase/v2\""
    return
  fi
  if ! json_str id operationID "$txt" || ! [[ $id =~ ^[A-Za-z0-9_:@][A-Za-z0-9._:@-]{0,199}$ ]]; then
    phase_malformed "operationID missing or invalid"
    return
  fi
  json_str st state "$txt" || true
  if [[ $txt =~ \"nextComponent\"[[:space:]]*:[[:space:]]*(null|\"([a-z-]*)\") ]]; then
    next=${BASH_REMATCH[2]}
  else
    phase_malformed "nextComponent missing"
    return
  fi
  case "$st/$next" in
    renewing/ | done/ | restart_pending/ | restart_pending/etcd | restart_pending/kube-apiserver | \
      restart_pending/kube-controller-manager | restart_pending/kube-scheduler) ;;
    *) phase_malformed "invalid state/nextComponent pair $st/${next:-null}"; return ;;
  esac
  PHASE_DESC="V2 operation $id $st"
  [ -z "$next" ] || PHASE_DESC+=" next=$next"
  if [ "$st" = "done" ]; then
    PHASE_INTENT="done"
    return
  fi
  # Unfinished: a success receipt of that operation means it is done.
  r="$S/completed/$id.json"
  if [ -L "$r" ] || { [ -e "$r" ] && [ ! -f "$r" ]; }; then
    phase_malformed "the receipt of its operation $id is unusable: $(nodepath "$r") is not a regular file"
    return
  fi
  if [ -f "$r" ]; then
    slurp r "$r"
    json_str rid operationID "$r" || true
    json_str outcome outcome "$r" || true
    if [ "$rid" != "$id" ] || [ -z "$outcome" ]; then
      phase_malformed "the receipt of its operation $id is unusable"
      return
    fi
    case $outcome in
      renewed | unchanged)
        PHASE_INTENT=done-by-receipt
        PHASE_DESC+=" (its success receipt exists: treated as done)"
        return
        ;;
    esac
  fi
  PHASE_INTENT=pending
  PHASE_DESC+=" (unfinished: the next renewal resumes it)"
}

# --- the node agent's state ---
# AGENT_INTENT: absent, idle, pending, unknown
AGENT_INTENT=absent
AGENT_DESC="absent (no typed intent)"
inspect_agent() {
  local rel=${AGENT_STATE:-$AGENT_DEFAULT} f txt phase id
  f="$ROOT$rel"
  if [ ! -e "$f" ]; then
    if [ -n "${AGENT_STATE:-}" ]; then
      AGENT_INTENT=unknown AGENT_DESC="unknown: $rel does not exist"
    fi
    return 0
  fi
  if [ -L "$f" ] || [ ! -f "$f" ]; then
    AGENT_INTENT=unknown AGENT_DESC="unknown: $rel is not a regular file"
    return 0
  fi
  slurp txt "$f"
  if [[ $txt =~ \"k8sCertRenewalState\"[[:space:]]*:[[:space:]]*\{([^}]*)\} ]] &&
    json_str phase phase "${BASH_REMATCH[1]}"; then
    json_str id operationID "${BASH_REMATCH[1]}" || true
    case $phase in
      renewing | restart_pending)
        AGENT_INTENT=pending AGENT_DESC="pending ($phase${id:+, operation $id})" ;;
      idle | done | completed | failed)
        AGENT_INTENT=idle AGENT_DESC="idle ($phase)" ;;
      *) AGENT_INTENT=unknown AGENT_DESC="unknown: $rel: unknown phase \"$phase\"" ;;
    esac
  else
    AGENT_INTENT=unknown AGENT_DESC="unknown: $rel: no k8sCertRenewalState.phase"
  fi
}

# --- manifests, staging directories, strays ---
declare -A MANIFEST_WHERE=()
STAGING_DESC=() STRAYS=() STAGING_NOT_EMPTY=()
inspect_manifests() {
  local c d why a r g where f name base candidates=() line
  shopt -s nullglob dotglob
  if [ ! -d "$MANIFESTS" ]; then
    fail manifests "manifests: $(nodepath "$MANIFESTS") does not exist"
  elif ! why=$(vet "$MANIFESTS" dir); then
    fail manifests "manifests: $why"
  fi
  for d in "$STAGING" "$AGENT_STAGING"; do
    if [ ! -e "$d" ] && [ ! -L "$d" ]; then
      STAGING_DESC+=("$(nodepath "$d") (absent)")
      continue
    fi
    if ! why=$(vet "$d" dir); then
      fail manifests "manifests: staging directory: $why"
      STAGING_DESC+=("$(nodepath "$d") (refused)")
      continue
    fi
    local entries=("$d"/*)
    STAGING_DESC+=("$(nodepath "$d") (${#entries[@]} entries)")
    [ "${#entries[@]}" = 0 ] || STAGING_NOT_EMPTY+=("$(nodepath "$d")")
    if [ "$d" = "$STAGING" ]; then
      for f in "${entries[@]}"; do
        name=${f##*/}
        case $name in
          etcd.yaml | kube-apiserver.yaml | kube-controller-manager.yaml | kube-scheduler.yaml) ;;
          *) fail manifests "manifests: unexpected entry $(nodepath "$f") in the runbook's staging directory" ;;
        esac
      done
    fi
  done
  for c in "${COMPONENTS[@]}"; do
    a=0 r=0 g=0
    for d in "$MANIFESTS" "$STAGING" "$AGENT_STAGING"; do
      f="$d/$c.yaml"
      [ -e "$f" ] || [ -L "$f" ] || continue
      if ! why=$(vet "$f" file); then
        fail manifests "manifests: $why"
        continue
      fi
      case $d in
        "$MANIFESTS") a=1 ;; "$STAGING") r=1 ;; *) g=1 ;;
      esac
    done
    where=""
    [ "$r" = 0 ] || where="the runbook's staging directory"
    [ "$g" = 0 ] || where="${where:+$where and }the node agent's staging directory"
    if [ "$a" = 1 ] && [ -z "$where" ]; then
      MANIFEST_WHERE[$c]=active
    elif [ "$a" = 1 ]; then
      MANIFEST_WHERE[$c]=both
      fail manifests "manifests: $c manifest is both active and staged in $where"
    elif [ -n "$where" ]; then
      MANIFEST_WHERE[$c]=staged
      fail manifests "manifests: $c manifest is staged in $where and not active"
    else
      MANIFEST_WHERE[$c]=missing
      fail manifests "manifests: $c manifest is missing"
    fi
  done
  # Strays: files kubelet would load as a second copy of a component.
  for f in "$MANIFESTS"/*; do
    base=${f##*/}
    case $base in
      .* | etcd.yaml | kube-apiserver.yaml | kube-controller-manager.yaml | kube-scheduler.yaml) continue ;;
    esac
    if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
    for c in "${COMPONENTS[@]}"; do
      case $base in
        "$c".* | "$c"-* | "$c"_*)
          STRAYS+=("$(nodepath "$f"): named like the $c manifest; kubelet loads it as a pod")
          continue 2
          ;;
      esac
    done
    candidates+=("$f")
  done
  if [ "${#candidates[@]}" -gt 0 ]; then
    while IFS= read -r line; do
      f=${line%%:*}
      [[ $line =~ (etcd|kube-apiserver|kube-controller-manager|kube-scheduler)[[:space:]]*$ ]] || [[ $line =~ (etcd|kube-apiserver|kube-controller-manager|kube-scheduler)-[A-Za-z0-9.-]+[[:space:]]*$ ]] || continue
      STRAYS+=("$(nodepath "$f"): a pod for ${BASH_REMATCH[1]}; kubelet would run a second ${BASH_REMATCH[1]}")
    done < <(grep -H -m1 -E '^[[:space:]]*(component|name):[[:space:]]*"?(etcd|kube-apiserver|kube-controller-manager|kube-scheduler)(-[A-Za-z0-9.-]+)?"?[[:space:]]*$' -- "${candidates[@]}" || true)
  fi
  shopt -u nullglob dotglob
  for f in "${STRAYS[@]}"; do warn "stray manifest $f"; done
}

# --- PKI: CA fingerprints, expiry of every CA and leaf ---
declare -A CA_SHA=()
CERT_ROWS=() CA_ROWS=() DUE=()
SOONEST_NAME="" SOONEST_DAYS="" SOONEST_END=""
START="" END="" END_ISO="" DAYS=""
# One entry per certificate, CAs first: kind (ca, pem, conf, conf-optional),
# name, file, CA name or sha256 key, base64 data (kubeconfigs), and the
# result: state (ok, missing, skipped, noparse), notBefore, notAfter epoch,
# notAfter ISO.
IT_KIND=() IT_NAME=() IT_FILE=() IT_CA=() IT_DATA=() IT_STATE=() IT_START=() IT_END=() IT_ISO=()

# cert_dates FILE|- : START, END (epoch seconds) and END_ISO of a PEM
# certificate (-: from stdin). Two processes: openssl, then date for both dates.
cert_dates() {
  local out s e in=()
  [ "$1" = - ] || in=(-in "$1")
  out=$(openssl x509 -noout -startdate -enddate "${in[@]}" 2>/dev/null) || return 1
  s=${out%%"$NL"*} e=${out#*"$NL"}
  out=$(date -u -f - '+%s %FT%TZ' <<<"${s#notBefore=}$NL${e#notAfter=}") || return 1
  START=${out%% *}
  out=${out#*"$NL"}
  END=${out%% *} END_ISO=${out#* }
}

# days_left EPOCH: whole days from NOW, rounded down (negative: expired).
days_left() {
  local d=$(($1 - NOW))
  if ((d >= 0)); then DAYS=$((d / 86400)); else DAYS=$(((d - 86399) / 86400)); fi
}

pki_items() {
  local entry name rel kind ca f line data
  for entry in "${CAS[@]}"; do
    name=${entry%%|*} rel=${entry#*|}
    IT_KIND+=(ca) IT_NAME+=("$name") IT_FILE+=("$K/pki/$rel") IT_CA+=("$rel") IT_DATA+=("")
  done
  for entry in "${LEAVES[@]}"; do
    IFS='|' read -r name rel kind ca <<<"$entry"
    f="$K/$rel" data=""
    if [ "$kind" != pem ] && [ -f "$f" ]; then
      # kubeadm embeds the client certificate: client-certificate-data.
      while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*client-certificate-data:[[:space:]]*([A-Za-z0-9+/=]+) ]]; then
          data=${BASH_REMATCH[1]}
          break
        fi
      done <"$f"
    fi
    IT_KIND+=("$kind") IT_NAME+=("$name") IT_FILE+=("$f") IT_CA+=("$ca") IT_DATA+=("$data")
  done
  local i
  for i in "${!IT_KIND[@]}"; do
    IT_STATE[i]=ok IT_START[i]="" IT_END[i]="" IT_ISO[i]=""
    if [ ! -f "${IT_FILE[i]}" ] || [ -L "${IT_FILE[i]}" ]; then
      if [ "${IT_KIND[i]}" = conf-optional ] && [ ! -e "${IT_FILE[i]}" ]; then
        IT_STATE[i]=skipped
      else
        IT_STATE[i]=missing
      fi
    elif [ "${IT_KIND[i]}" != ca ] && [ "${IT_KIND[i]}" != pem ] && [ -z "${IT_DATA[i]}" ]; then
      IT_STATE[i]=noparse
    fi
  done
}

# The old runbook's way: one openssl (and one date) per certificate, plus
# base64 for a kubeconfig's embedded certificate.
dates_per_cert() {
  local i pem
  for i in "${!IT_KIND[@]}"; do
    [ "${IT_STATE[i]}" = ok ] || continue
    if [ -z "${IT_DATA[i]}" ]; then
      cert_dates "${IT_FILE[i]}" || { IT_STATE[i]=noparse; continue; }
    else
      if ! pem=$(base64 -d <<<"${IT_DATA[i]}" 2>/dev/null) || ! cert_dates - <<<"$pem"; then
        IT_STATE[i]=noparse
        continue
      fi
    fi
    IT_START[i]=$START IT_END[i]=$END IT_ISO[i]=$END_ISO
  done
}

# --batch: every certificate through one openssl pipeline (crl2pkcs7 |
# pkcs7 -print_certs -text) and one date call for all dates. Returns 1 (and
# the caller falls back to dates_per_cert) when any certificate fails.
dates_batched() {
  local i files=() datas=() idx=() args=() out line dates=() n=0 conv
  # Order in the output: the files named with -certfile, then stdin (the
  # kubeconfigs' certificates, decoded one after the other).
  for i in "${!IT_KIND[@]}"; do
    if [ "${IT_STATE[i]}" != ok ] || [ -n "${IT_DATA[i]}" ]; then continue; fi
    idx+=("$i") args+=(-certfile "${IT_FILE[i]}")
  done
  for i in "${!IT_KIND[@]}"; do
    if [ "${IT_STATE[i]}" != ok ] || [ -z "${IT_DATA[i]}" ]; then continue; fi
    idx+=("$i") datas+=("${IT_DATA[i]}")
  done
  [ "${#idx[@]}" -gt 0 ] || return 0
  [ "${#datas[@]}" = 0 ] || args+=(-certfile /dev/stdin)
  out=$(
    for d in "${datas[@]}"; do base64 -d <<<"$d" || exit 1; done |
      openssl crl2pkcs7 -nocrl "${args[@]}" 2>/dev/null |
      openssl pkcs7 -print_certs -text -noout 2>/dev/null
  ) || return 1
  while IFS= read -r line; do
    if [[ $line =~ ^[[:space:]]*Not\ (Before|After)[[:space:]]*:[[:space:]]*(.*)$ ]]; then
      dates+=("${BASH_REMATCH[2]}")
    fi
  done <<<"$out"
  [ "${#dates[@]}" = $((2 * ${#idx[@]})) ] || return 1
  conv=$(printf '%s\n' "${dates[@]}" | date -u -f - '+%s %FT%TZ') || return 1
  while IFS= read -r line; do
    i=${idx[n / 2]}
    if ((n % 2 == 0)); then
      IT_START[i]=${line%% *}
    else
      IT_END[i]=${line%% *} IT_ISO[i]=${line#* }
    fi
    n=$((n + 1))
  done <<<"$conv"
}

inspect_pki() {
  local i name f line sums ca
  sums=$(cd "$K/pki" && sha256sum ca.crt etcd/ca.crt front-proxy-ca.crt 2>/dev/null) || true
  while read -r line; do
    [ -n "$line" ] && CA_SHA[${line##* }]=${line%% *}
  done <<<"$sums"
  pki_items
  if [ "${BATCH:-0}" = 1 ]; then
    dates_batched || dates_per_cert
  else
    dates_per_cert
  fi
  for i in "${!IT_KIND[@]}"; do
    name=${IT_NAME[i]} f=${IT_FILE[i]} ca=${IT_CA[i]}
    if [ "${IT_KIND[i]}" = ca ]; then
      case ${IT_STATE[i]} in
        ok) ;;
        missing) fail pki "pki: $(nodepath "$f") does not exist"; CA_ROWS+=("$name|-|ERROR|-"); continue ;;
        *) fail pki "pki: $(nodepath "$f") does not parse"; CA_ROWS+=("$name|-|ERROR|${CA_SHA[$ca]:--}"); continue ;;
      esac
      days_left "${IT_END[i]}"
      CA_ROWS+=("$name|${IT_ISO[i]}|${DAYS}d|${CA_SHA[$ca]:--}")
      if ((IT_END[i] <= NOW + THRESHOLD_DAYS * 86400)); then
        warn "CA $name expires ${IT_ISO[i]} ($DAYS days left, within $THRESHOLD_DAYS); CAs are never renewed by this runbook"
      fi
      continue
    fi
    case ${IT_STATE[i]} in
      ok) ;;
      skipped) CERT_ROWS+=("$name|-|-|$ca|skipped (absent)"); continue ;;
      missing) fail pki "pki: $(nodepath "$f") does not exist"; CERT_ROWS+=("$name|-|ERROR|$ca|missing"); continue ;;
      *) fail pki "pki: $(nodepath "$f"): no parsable certificate"; CERT_ROWS+=("$name|-|ERROR|$ca|does not parse"); continue ;;
    esac
    days_left "${IT_END[i]}"
    CERT_ROWS+=("$name|${IT_ISO[i]}|${DAYS}d|$ca|")
    ((IT_START[i] <= NOW)) || warn "leaf $name ($(nodepath "$f")) is not valid yet: check the node's clock"
    if ((IT_END[i] <= NOW + THRESHOLD_DAYS * 86400)); then
      DUE+=("$name|$DAYS")
    fi
    if [ -z "$SOONEST_DAYS" ] || ((IT_END[i] < SOONEST_END)); then
      SOONEST_NAME=$name SOONEST_DAYS=$DAYS SOONEST_END=${IT_END[i]}
    fi
  done
}

# --- text output ---
print_node_summary() {
  local c
  printf '%-34s%s\n' "LOCK" "$LOCK_DESC" "PHASE FILE" "$PHASE_DESC" "AGENT STATE" "$AGENT_DESC"
  for c in "${COMPONENTS[@]}"; do
    printf '%-34s%s\n' "MANIFEST $c" "${MANIFEST_WHERE[$c]:-unknown}"
  done
  printf '%-34s%s\n' "STAGING (runbook)" "${STAGING_DESC[0]:-}" "STAGING (agent)" "${STAGING_DESC[1]:-}"
}

print_cert_tables() {
  local row a b c d e
  echo
  printf '%-26s%-22s%-10s%-16s%s\n' CERTIFICATE EXPIRES RESIDUAL CA NOTE
  for row in "${CERT_ROWS[@]}"; do
    IFS='|' read -r a b c d e <<<"$row"
    printf '%-26s%-22s%-10s%-16s%s\n' "$a" "$b" "$c" "$d" "$e"
  done
  echo
  printf '%-23s%-22s%-10s%s\n' "CERTIFICATE AUTHORITY" EXPIRES RESIDUAL SHA256
  for row in "${CA_ROWS[@]}"; do
    IFS='|' read -r a b c d <<<"$row"
    printf '%-23s%-22s%-10s%s\n' "$a" "$b" "$c" "$d"
  done
}

print_list() {
  local title=$1 item
  shift
  [ "$#" -gt 0 ] || return 0
  echo "$title:"
  for item in "$@"; do echo "  - $item"; done
}
