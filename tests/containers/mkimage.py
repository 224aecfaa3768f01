#!/usr/bin/env python3
"""mkimage.py [--entrypoint ARG,ARG...] NAME[,NAME...] OUT.tar SRC[:DEST]... :
a one-layer OCI image archive that `ctr images import` reads, under each NAME.

Deterministic: the same inputs give the same bytes (fixed mtimes, owners and
order; gzip without a timestamp), so an image ID is the same on every run.
The entrypoint is only needed by the sandbox (pause) image: containers of
the tier always give their command. Directories of
DEST are created 0755; a SRC keeps its permission bits. `-` as SRC (`-:DEST`)
makes an empty directory DEST.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def main(argv):
    entry = None
    if argv[:1] == ["--entrypoint"]:
        entry, argv = argv[1].split(","), argv[2:]
    if len(argv) < 3:
        sys.exit(__doc__)
    names, out, files = argv[0].split(","), argv[1], argv[2:]
    entries = {}  # dest -> (src or None for a directory)
    for spec in files:
        src, _, dest = spec.partition(":")
        dest = (dest or src).strip("/")
        parts = dest.split("/")
        for i in range(1, len(parts)):
            entries.setdefault("/".join(parts[:i]), None)
        entries[dest] = None if src == "-" else src
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for dest in sorted(entries):
            src = entries[dest]
            ti = tarfile.TarInfo(dest)
            ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "", ""
            if src is None:
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                t.addfile(ti)
                continue
            st = os.stat(src)
            ti.size, ti.mode = st.st_size, st.st_mode & 0o7777
            with open(src, "rb") as f:
                t.addfile(ti, f)
    raw = layer.getvalue()
    gz = gzip.compress(raw, mtime=0)
    cfg = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if entry:
        cfg["Entrypoint"] = entry
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": cfg,
            "rootfs": {"type": "layers", "diff_ids": [sha(raw)]},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(config), "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": sha(gz), "size": len(gz)}],
        },
        sort_keys=True,
    ).encode()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": sha(manifest),
                    "size": len(manifest),
                    "annotations": {"io.containerd.image.name": n, "org.opencontainers.image.ref.name": n.rsplit(":", 1)[-1]},
                }
                for n in names
            ],
        },
        sort_keys=True,
    ).encode()
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as t:
        def add(n, b):
            ti = tarfile.TarInfo(n)
            ti.size, ti.mtime, ti.mode = len(b), 0, 0o644
            t.addfile(ti, io.BytesIO(b))

        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", index)
        for b in (config, manifest, gz):
            add("blobs/sha256/" + hashlib.sha256(b).hexdigest(), b)


if __name__ == "__main__":
    main(sys.argv[1:])
