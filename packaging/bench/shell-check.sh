#!/usr/bin/env bash
# The --check question answered the way the old shell runbook answered it:
# the baseline that packaging/bench/run times against
# `nvke-cert-runbook --check`. Read-only; creates nothing.
#
#   shell-check.sh [--root DIR] [--threshold-days N] [--force]
#                  [--agent-state PATH] [--now RFC3339] [--batch]
#
# Looks at what SPEC section 5 looks at: the lock (non-blocking flock on the
# existing lock file), its owner, the phase file (legacy five-line or V2,
# with the receipt of an unfinished V2 operation), the node agent's state,
# the four manifests in the manifests and both staging directories, strays,
# the CA fingerprints (sha256sum) and the expiry of every CA and kubeadm
# leaf (openssl x509 -startdate -enddate, date for the arithmetic), then
# decides renew / unchanged / failed and the executors. Prints a text report
# like the binary's; exit 0 when decided, 1 on a check failure, 2 on usage.
# Needs: bash 4.3+, coreutils (date, sha256sum, stat, base64), openssl,
# util-linux flock, grep.
set -euo pipefail

ROOT="" BATCH=0 THRESHOLD_DAYS=30 FORCE=0 AGENT_STATE="" NOW_RFC3339=""
while [ "$#" -gt 0 ]; do
  case $1 in
    --root) ROOT=${2%/}; shift 2 ;;
    --threshold-days) THRESHOLD_DAYS=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    --agent-state) AGENT_STATE=$2; shift 2 ;;
    --now) NOW_RFC3339=$2; shift 2 ;;
    --batch) BATCH=1; shift ;;
    *) echo "usage: $0 [--root DIR] [--threshold-days N] [--force] [--agent-state PATH] [--now RFC3339] [--batch]" >&2; exit 2 ;;
  esac
done
if ! [[ $THRESHOLD_DAYS =~ ^[0-9]+$ ]] || ((THRESHOLD_DAYS < 7 || THRESHOLD_DAYS > 90)); then
  echo "$0: --threshold-days must be 7..90" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=shell-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/shell-common.sh"

now_epoch
stat_paths
inspect_state
inspect_phase
inspect_agent
inspect_manifests
inspect_pki

# Decide (SPEC section 5).
legacy_pending=0 typed_pending=0
[ "$PHASE_INTENT" != pending ] || legacy_pending=1
[ "$AGENT_INTENT" != pending ] || typed_pending=1
if [ "$AGENT_INTENT" = unknown ]; then
  if [ "$legacy_pending" = 1 ]; then
    warn "agent state ${AGENT_DESC}; legacy intent is pending, so only the legacy executor is selected"
  else
    fail agent-state "agent state ${AGENT_DESC}"
  fi
fi
REASONS=()
decision="" executors=""
if [ "${#FAILURES[@]}" -gt 0 ]; then
  decision=failed
  # busy first, as the binary orders it
  for f in "${FAILURES[@]}"; do [ "${f%%|*}" != busy ] || REASONS+=("${f#*|}"); done
  for f in "${FAILURES[@]}"; do [ "${f%%|*}" = busy ] || REASONS+=("${f#*|}"); done
else
  [ "$legacy_pending" = 0 ] || REASONS+=("legacy intent pending: the runbook's phase file is unfinished and must finish its restarts")
  [ "$typed_pending" = 0 ] || REASONS+=("typed intent pending: the node agent's renewal is ${AGENT_DESC} and must finish (no legacy fallback)")
  if [ "$legacy_pending$typed_pending" = 11 ]; then
    decision=renew executors="legacy, typed"
  elif [ "$legacy_pending" = 1 ]; then
    decision=renew executors=legacy
  elif [ "$typed_pending" = 1 ]; then
    decision=renew executors=typed
  elif [ "$FORCE" = 1 ]; then
    decision=renew executors=typed
    REASONS+=("forced: expiry is not checked")
  elif [ "${#DUE[@]}" -gt 0 ]; then
    decision=renew executors=typed
    for d in "${DUE[@]}"; do
      n=${d%%|*} days=${d#*|}
      if ((days < 0)); then
        REASONS+=("leaf $n expired $((-days)) days ago (threshold $THRESHOLD_DAYS)")
      else
        REASONS+=("leaf $n expires in $days days (threshold $THRESHOLD_DAYS)")
      fi
    done
  else
    decision=unchanged
    REASONS+=("no leaf expires within $THRESHOLD_DAYS days (soonest: $SOONEST_NAME in $SOONEST_DAYS days)")
  fi
fi

line="CHECK: ${decision^^}"
[ -z "$executors" ] || line+="  executors: $executors"
echo "$line"
print_list reasons "${REASONS[@]}"
print_list warnings "${WARNINGS[@]}"
echo
print_node_summary
print_cert_tables
[ "$decision" != failed ] || exit 1
exit 0
