//! The test-support library every harness shares (`mod support;` at the top
//! of a tests/*.rs crate root; tests/README.md has the map of harnesses):
//!
//! - [`hex`]: hex and sha256 digests.
//! - [`tree`]: fixture node trees (copies with kubeadm's modes), tree
//!   snapshots and their differences.
//! - [`kubeadm_manifests`]: the four static pod manifests of a kubeadm
//!   v1.31 node, written from a description of the node (families,
//!   addresses, ports, external etcd, serving files), as kubeadm writes
//!   them.
//! - [`node`] (feature `sim`): the simulated control-plane node
//!   (tests/simnode) and the runbook run against it.
//! - [`oracle`] (feature `sim`): what must hold of a node after any run
//!   (each manifest in exactly one place with its bytes and mode, receipts
//!   never changed, CAs untouched, the phase file valid), and the
//!   controller's recovery (the fencing check, then a new operation) with
//!   the checks after it.
//! - [`containers`] (feature `sim`): the containers tier's private
//!   containerd, real crictl and locally built images.
//! - [`strace`], [`sweep`] (feature `sim`): the strace log parser, and the
//!   crash and I/O-error sweeps' recording, sampling and side-by-side
//!   runner.
//! - [`netns`]: a network namespace of its own for a run on a fixture
//!   tree (as root), so no port of the host changes its result.
//! - [`say`], [`tail`]: printing past the harness's capture, the end of a
//!   long output.
//!
//! Each harness uses part of it: dead code here is expected.
#![allow(dead_code)]

#[cfg(feature = "sim")]
pub mod containers;
pub mod hex;
pub mod kubeadm_manifests;
pub mod netns;
#[cfg(feature = "sim")]
pub mod node;
#[cfg(feature = "sim")]
pub mod oracle;
#[cfg(feature = "sim")]
pub mod strace;
#[cfg(feature = "sim")]
pub mod sweep;
pub mod tree;

use std::io::Write;

/// Print a line on the real stdout, past the harness's capture: summary
/// lines (`crash points: N recovered of N`, ...) belong in CI's log.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The last `n` bytes of `s` (from a character boundary).
pub fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// A node root built the way the golden cases build theirs: `setup` is
/// bash over tests/golden/prelude.sh (`base rsa; stage etcd; ...`), run with
/// `ROOT` and `FIX` set. The root is `<tempdir>/root`, under /tmp.
pub fn prelude_node(setup: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("nvke-node-")
        .tempdir_in("/tmp")
        .unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let st = std::process::Command::new("/bin/bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; umask 022; source {:?}; {setup}",
            dir.join("tests/golden/prelude.sh")
        ))
        .env("ROOT", &root)
        .env("FIX", dir.join("fixtures"))
        .status()
        .unwrap();
    assert!(st.success(), "setup failed: {setup}");
    (tmp, root)
}

/// Poll `f` until it gives a value or `secs` pass (None then): at once,
/// then with back-off from 20 ms to 1 s between tries.
pub fn poll<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let mut nap = std::time::Duration::from_millis(20);
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(std::time::Duration::from_secs(1));
    }
}
