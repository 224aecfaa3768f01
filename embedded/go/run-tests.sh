#!/usr/bin/env bash
# The Go package's tests, as CI runs them: build the static binary if it is
# not there (packaging/build-static), embed it (prepare.sh), then `go test`
# against it on a copy of the demo node. Installs Debian's golang-go when
# `go` is missing (the machine's own files must install what they need).
#
#   embedded/go/run-tests.sh [go test flags...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)

if ! command -v go >/dev/null; then
  echo "run-tests.sh: installing golang-go" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi
if [ ! -x "$repo/target/static/nvke-cert-runbook" ]; then
  "$repo/packaging/build-static"
fi
"$here/prepare.sh"

cd "$here"
# Standard library only: nothing may be downloaded.
export GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local
go vet ./...
go test -count=1 "$@" ./...
