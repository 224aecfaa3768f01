//! Named crash points for the reliability tests (`--features failpoints`;
//! absent from release builds). `FAILPOINTS="<name>=return"` makes the
//! process kill itself with SIGKILL at that point: no unwinding, no Drop, no
//! restoration, like a power cut.
//!
//! Every `crash_point!` name in the source must be listed in [`ALL`]; a test
//! checks both directions.
//!
//! One hold point is not a crash point: `evidence-before-link`
//! (`src/node/evidence/write.rs`, a plain `fail::fail_point!`), reached once the
//! evidence bundle's temp file is written and fsynced, before it is named.
//! `FAILPOINTS="evidence-before-link=sleep(1500)"` holds the temp file there
//! so a test can send a real signal while it exists (tests/evidence.rs).

/// Every crash point, in the order a renewal reaches them.
pub const ALL: &[&str] = &[
    "renew-after-lock",
    "renew-after-phase-renewing",
    "renew-after-backup",
    "renew-after-kubeadm",
    "renew-after-verify",
    "restart-after-stage",
    "restart-in-wait-stop",
    "restart-after-stop",
    "restart-after-unstage",
    "restart-in-wait-start",
    "gate-in-wait",
    "restart-before-record",
    "renew-before-receipt",
    "renew-after-receipt-before-done",
    "fence-after-restore-before-receipt",
];

/// Die at once when the named failpoint is configured (any action but off).
#[macro_export]
macro_rules! crash_point {
    ($name:literal) => {{
        #[cfg(feature = "failpoints")]
        {
            if fail::eval($name, |_| ()).is_some() {
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                std::process::abort();
            }
        }
    }};
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::print_stderr)] // tests read the failpoint definitions directly
mod tests {
    /// Every `crash_point!("…")` in src/ is listed in `ALL`, and every listed
    /// name is used exactly once.
    #[test]
    fn the_list_and_the_source_agree() {
        let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
        let mut files = Vec::new();
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().and_then(|x| x.to_str()) == Some("rs")
                    && !p.ends_with("failpoints.rs")
                {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 30, "{files:?}");
        let mut used: Vec<String> = Vec::new();
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            let mut rest = text.as_str();
            let needle = "crash_point!(\"";
            while let Some(i) = rest.find(needle) {
                rest = &rest[i + needle.len()..];
                let end = rest.find('"').unwrap();
                used.push(rest[..end].to_string());
            }
        }
        let mut listed: Vec<String> = super::ALL.iter().map(|s| s.to_string()).collect();
        used.sort();
        listed.sort();
        assert_eq!(
            used, listed,
            "crash points in src/ and failpoints::ALL differ"
        );
    }
}
