//! Staging conflicts (the guide: "compare the staged and active copies on
//! the failed node and keep exactly one"): for every one of the four
//! manifests both in `manifests/` and in a staging directory, both copies
//! read (bounded, never through a symlink), their digests, sizes and
//! modification times, and a bounded diff. Read-only.

use crate::contract::{ManifestCopy, StagingConflict};
use crate::contract::{Sha256Hex, Timestamp};
use crate::node::fsx::{Root, Trust, NODE_FILE_MAX};
use crate::node::manifests::ManifestsReport;
use crate::node::paths::{node, AGENT_STAGING_DIR, MANIFESTS_DIR, STAGING_DIR};
use crate::rules::component::Component;
use crate::rules::textdiff;

/// Longest diff a conflict carries (header lines included).
pub const DIFF_LINES: usize = 60;

/// One copy: its bytes (None: unreadable) and what the view shows.
fn read_copy(root: &Root, dir: &str, c: Component) -> (Option<Vec<u8>>, ManifestCopy) {
    let rel = format!("{dir}/{}", c.manifest_file());
    let mut copy = ManifestCopy {
        path: node(&rel),
        sha256: None,
        size: None,
        modified_at: None,
        error: None,
    };
    let stat = root.open_dir(dir, Trust::Strict).and_then(|d| match d {
        Some(d) => d.stat_entry(&c.manifest_file()),
        None => Ok(None),
    });
    match stat {
        Ok(Some(st)) => {
            copy.modified_at = time::OffsetDateTime::from_unix_timestamp(st.st_mtime)
                .ok()
                .map(|t| Timestamp(crate::rules::clock::rfc3339(t)));
        }
        Ok(None) => {}
        Err(e) => copy.error = Some(e.to_string()),
    }
    let bytes = match root.read_file(&rel, NODE_FILE_MAX, Trust::Strict) {
        Ok(Some(b)) => Some(b),
        Ok(None) => {
            copy.error = Some(format!("{} does not exist", copy.path));
            None
        }
        Err(e) => {
            copy.error = Some(e.to_string());
            None
        }
    };
    if let Some(b) = &bytes {
        copy.sha256 = Some(Sha256Hex(crate::rules::pki::sha256_hex(b)));
        copy.size = Some(b.len() as u64);
    }
    (bytes, copy)
}

/// Every manifest both active and staged, compared.
pub fn conflicts(root: &Root, m: &ManifestsReport) -> Vec<StagingConflict> {
    let mut out = Vec::new();
    for c in Component::ALL {
        let Some(v) = m.manifests.get(&c) else {
            continue;
        };
        if !v.active {
            continue;
        }
        for (staged, dir, who) in [
            (v.runbook_staged, STAGING_DIR, "runbook"),
            (v.agent_staged, AGENT_STAGING_DIR, "agent"),
        ] {
            if !staged {
                continue;
            }
            let (a, active) = read_copy(root, MANIFESTS_DIR, c);
            let (b, staged) = read_copy(root, dir, c);
            let identical = match (&a, &b) {
                (Some(a), Some(b)) => Some(a == b),
                _ => None,
            };
            let newer = match (&active.modified_at, &staged.modified_at) {
                (Some(x), Some(y)) if x.0 == y.0 => Some("same"),
                (Some(x), Some(y)) if x.0 > y.0 => Some("active"),
                (Some(_), Some(_)) => Some("staged"),
                _ => None,
            };
            let diff = match (&a, &b, identical) {
                (Some(a), Some(b), Some(false)) => textdiff::unified(
                    &String::from_utf8_lossy(a),
                    &String::from_utf8_lossy(b),
                    &active.path,
                    &staged.path,
                    DIFF_LINES,
                ),
                _ => Vec::new(),
            };
            out.push(StagingConflict {
                component: c,
                staging: who.to_string(),
                active,
                staged,
                identical,
                newer: newer.map(str::to_string),
                diff,
            });
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant manifests in a temp root
mod tests {
    use super::*;

    fn plant(root: &std::path::Path, dir: &str, name: &str, body: &str) {
        let d = root.join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), body).unwrap();
    }

    #[test]
    fn identical_and_differing_copies_are_told_apart() {
        let t = tempfile::tempdir().unwrap();
        plant(t.path(), MANIFESTS_DIR, "etcd.yaml", "a\nb\n");
        plant(t.path(), STAGING_DIR, "etcd.yaml", "a\nb\n");
        plant(t.path(), MANIFESTS_DIR, "kube-scheduler.yaml", "a\nb\n");
        plant(t.path(), AGENT_STAGING_DIR, "kube-scheduler.yaml", "a\nc\n");
        plant(t.path(), MANIFESTS_DIR, "kube-apiserver.yaml", "x\n");
        let root = Root::open(t.path()).unwrap();
        let m = crate::node::manifests::inspect(&root);
        let cs = conflicts(&root, &m);
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].component, Component::Etcd);
        assert_eq!(cs[0].identical, Some(true));
        assert!(cs[0].diff.is_empty());
        assert_eq!(cs[0].active.sha256, cs[0].staged.sha256);
        assert_eq!(cs[0].staging, "runbook");
        assert_eq!(cs[1].component, Component::KubeScheduler);
        assert_eq!(cs[1].staging, "agent");
        assert_eq!(cs[1].identical, Some(false));
        assert_ne!(cs[1].active.sha256, cs[1].staged.sha256);
        assert_eq!(cs[1].active.size, Some(4));
        assert!(cs[1].diff.contains(&"-b".to_string()) && cs[1].diff.contains(&"+c".to_string()));
    }

    #[test]
    fn a_symlinked_copy_is_not_read() {
        let t = tempfile::tempdir().unwrap();
        plant(t.path(), MANIFESTS_DIR, "etcd.yaml", "a\n");
        plant(t.path(), "secret", "key", "PRIVATE\n");
        std::fs::create_dir_all(t.path().join(STAGING_DIR)).unwrap();
        std::os::unix::fs::symlink(
            t.path().join("secret/key"),
            t.path().join(STAGING_DIR).join("etcd.yaml"),
        )
        .unwrap();
        let root = Root::open(t.path()).unwrap();
        let mut m = crate::node::manifests::inspect(&root);
        // Whatever the inspection made of it, a comparison never follows it.
        m.manifests
            .get_mut(&Component::Etcd)
            .unwrap()
            .runbook_staged = true;
        let cs = conflicts(&root, &m);
        assert_eq!(cs[0].identical, None);
        assert!(cs[0].staged.sha256.is_none() && cs[0].staged.error.is_some());
        assert!(cs[0].diff.is_empty());
    }
}
