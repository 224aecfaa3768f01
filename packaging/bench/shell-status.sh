#!/usr/bin/env bash
# The operator's status question (is this node clean, what happened last?)
# answered the way the old shell runbook answered it: the baseline that
# packaging/bench/run times against `nvke-cert-runbook --status-only`.
# Read-only; creates nothing.
#
#   shell-status.sh [--root DIR] [--threshold-days N] [--now RFC3339] [--batch]
#
# Everything shell-check.sh looks at, plus the 20 most recent receipts
# (`ls -t` of state/completed/, the newest 20 read) and how many there are.
# Exit 0 when the node is clean (lock free, no unfinished phase, all four
# manifests active, nothing staged), 1 otherwise, 2 on usage.
set -euo pipefail

ROOT="" BATCH=0 THRESHOLD_DAYS=30 AGENT_STATE="" NOW_RFC3339=""
while [ "$#" -gt 0 ]; do
  case $1 in
    --root) ROOT=${2%/}; shift 2 ;;
    --threshold-days) THRESHOLD_DAYS=$2; shift 2 ;;
    --now) NOW_RFC3339=$2; shift 2 ;;
    --batch) BATCH=1; shift ;;
    *) echo "usage: $0 [--root DIR] [--threshold-days N] [--now RFC3339] [--batch]" >&2; exit 2 ;;
  esac
done
# shellcheck source-path=SCRIPTDIR source=shell-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/shell-common.sh"

now_epoch
stat_paths
inspect_state
inspect_phase
inspect_agent
inspect_manifests
inspect_pki

# Receipts: the newest 20 by modification time, and the count. One listing
# (ls -t stats every entry and sorts), awk counts and keeps the first 20.
RECEIPTS=() receipt_count=0
if [ "$STATE_OK" = 1 ] && [ -e "$S/completed" ]; then
  if why=$(vet "$S/completed" dir); then
    # shellcheck disable=SC2012 # receipt names are operation IDs: no newlines
    mapfile -t listing < <(ls -1t -- "$S/completed" | awk '/^[^.].*\.json$/ { n++; if (n <= 20) print } END { print n + 0 }')
    receipt_count=${listing[-1]}
    unset 'listing[-1]'
    for name in "${listing[@]}"; do
      id=${name%.json} txt="" rid="" outcome="" phase="" fin=""
      if [ -f "$S/completed/$name" ] && [ ! -L "$S/completed/$name" ]; then
        slurp txt "$S/completed/$name"
      fi
      json_str rid operationID "$txt" || true
      json_str outcome outcome "$txt" || true
      json_str phase phase "$txt" || true
      json_str fin finishedAt "$txt" || true
      if [ "$rid" != "$id" ] || [ -z "$outcome" ]; then
        RECEIPTS+=("$id|MALFORMED|-|-")
      else
        RECEIPTS+=("$id|$outcome|$phase|$fin")
      fi
    done
  else
    fail state "receipts directory: $why"
  fi
fi

# Clean? (SPEC section 6)
WHY=()
for f in "${FAILURES[@]}"; do
  case ${f%%|*} in busy | state | phase-file | manifests) WHY+=("${f#*|}") ;; esac
done
[ "$PHASE_INTENT" != pending ] || WHY+=("unfinished phase: $PHASE_DESC")
for d in "${STAGING_NOT_EMPTY[@]}"; do WHY+=("the staging directory $d is not empty"); done

if [ "${#WHY[@]}" = 0 ]; then echo "NODE: CLEAN"; else echo "NODE: NOT CLEAN"; fi
print_list why "${WHY[@]}"
print_list warnings "${WARNINGS[@]}"
echo
print_node_summary
print_cert_tables
echo
if [ "$receipt_count" = 0 ]; then
  echo "RECENT RECEIPTS: none"
else
  echo "RECENT RECEIPTS (newest ${#RECEIPTS[@]} of $receipt_count)"
  printf '%-40s%-20s%-26s%s\n' OPERATION OUTCOME PHASE FINISHED
  for r in "${RECEIPTS[@]}"; do
    IFS='|' read -r a b c d <<<"$r"
    printf '%-40s%-20s%-26s%s\n' "$a" "$b" "$c" "$d"
  done
fi
[ "${#WHY[@]}" = 0 ] || exit 1
exit 0
