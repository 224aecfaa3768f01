//! `--status-only` (SPEC section 6): the operator view (read-only): the
//! node read once, judged by `judge::status`, and the evidence bundle. The
//! controller's fencing check is `modes::fence`.

use crate::contract as doc;
use crate::contract::cli::{Global, ReceiptFilter};
use crate::judge::status::{text_evidence, Asked, Drafted, Read, Viewed};
use crate::modes::output::{self, Report};
use crate::node::conflict;
use crate::node::fsx::Root;
use crate::node::inspect;
use crate::node::manifests;
use crate::node::snapshot::{NodeSnapshot, Receipts};
use crate::rules::opid::OperationId;
use crate::rules::outcome::exit;
use crate::tools::live::Observation;
use crate::tools::signals::Cancel;

/// What the operator view is asked: an operation, an evidence bundle, which
/// receipts to list.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ask<'a> {
    pub id: Option<&'a OperationId>,
    /// `--evidence PATH`, relative to the root.
    pub evidence: Option<&'a str>,
    pub receipts: ReceiptFilter,
    /// The signals that stop an evidence bundle (SPEC 6, v1.2): asked
    /// between its entries and before it gets its name.
    pub cancel: Option<&'a Cancel>,
}

/// The read-only operator view: the node read once, judged.
pub fn view(root: &Root, g: &Global, ask: &Ask<'_>, observed: &Observation) -> Report {
    let s = NodeSnapshot::for_status(root, ask.id, listing(ask.receipts));
    let none = Receipts::default();
    let receipts = s.receipts.as_ref().unwrap_or(&none);
    let read = Read {
        now: g.clock.now(),
        foreign: manifests::not_renewable(root, &s.manifests),
        conflicts: conflict::conflicts(root, &s.manifests),
    };
    let asked = Asked {
        id: ask.id,
        evidence: ask.evidence.is_some(),
        receipts: ask.receipts,
    };
    let v = Viewed::judge(g, asked, &s, receipts, observed, read);
    let Drafted {
        head,
        code: viewed,
        mut text,
        mut document,
    } = v.draft(g);
    let code = with_evidence(root, ask, &mut document, &mut text, viewed);
    v.close(&mut text, head, viewed, code, g);
    Report {
        code,
        doc: Box::new(document),
        text: g.term.render(&text, "NODE:", v.severity()),
    }
}

/// What the view lists of the receipts (`--receipts`).
fn listing(which: ReceiptFilter) -> inspect::Listing {
    match which {
        ReceiptFilter::Recent => inspect::Listing::Newest(inspect::RECENT_RECEIPTS),
        ReceiptFilter::All => inspect::Listing::All,
        ReceiptFilter::Failed => inspect::Listing::Failed,
    }
}

/// `--evidence PATH`: write the bundle of the document as built so far,
/// record it in the document and the text. A bundle not written never
/// exits 0 (1 instead; any other code stays).
fn with_evidence(
    root: &Root,
    ask: &Ask<'_>,
    document: &mut doc::StatusDocument,
    text: &mut String,
    code: u8,
) -> u8 {
    let Some(rel) = ask.evidence else {
        return code;
    };
    let stop = || ask.cancel.is_some_and(Cancel::is_cancelled);
    let ev = crate::node::evidence::write(root, rel, document, ask.id, &stop);
    if let doc::EvidenceView::NotWritten(n) = &ev {
        tracing::warn!("evidence not written: {}", output::escape(&n.error));
    }
    text_evidence(text, &ev);
    let code = match &ev {
        doc::EvidenceView::NotWritten(_) if code == exit::OK => exit::FAILED,
        _ => code,
    };
    document.evidence = Some(ev);
    code
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage manifests and read their temp node directly
pub(crate) mod tests {
    //! SPEC 6: the operator view (read-only, creates nothing; clean or not,
    //! and why), on the rsa fixture node. The helpers that stage a dead
    //! run's leftovers serve `modes::fence`'s tests too.
    use super::*;
    use crate::node::inspect::state_files::*;
    use crate::node::lock;
    use crate::node::paths::{MANIFESTS_DIR, STAGING_DIR};
    use crate::node::statedir::StateDir;
    use crate::rules::component::Component;
    use crate::tools::runtime::double::node_tree;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    /// The live node of a healthy kubelet for the tree (the test double).
    /// etcd's peer port moves to loopback (the fixture's 10.0.0.11 is not
    /// this host's, and is not asked).
    fn healthy(root: &Root) -> crate::tools::live::Observation {
        let etcd = root.host_path().join(MANIFESTS_DIR).join("etcd.yaml");
        if let Ok(m) = std::fs::read_to_string(&etcd) {
            std::fs::write(
                &etcd,
                m.replace("https://10.0.0.11:2380", "https://127.0.0.1:2380"),
            )
            .unwrap();
        }
        use crate::tools::runtime::double::{container, sandbox, Double};
        let rt = Double::kubelet(root.host_path());
        // The fixture's kube-vip static pod runs too.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            .to_string();
        rt.push(container(
            "kube-vip",
            "kube-vip-cp-1",
            "kube-vip-0",
            "sandbox-kube-vip-0",
            true,
            &now,
        ));
        rt.add_sandbox(sandbox("sandbox-kube-vip-0", "file"));
        crate::tools::live::observe(
            &rt,
            root,
            time::macros::datetime!(2026-11-30 00:00:00 UTC),
            Duration::from_secs(1),
        )
    }

    pub(crate) fn global(root: &Path) -> Global {
        Global {
            lock_timeout: Duration::from_millis(300),
            ..Global::for_tests(root)
        }
    }

    /// Move `c`'s manifest into the runbook's staging directory, as a run
    /// killed mid-restart leaves it.
    pub(crate) fn leave_staged(t: &Path, c: Component) {
        let staging = t.join(STAGING_DIR);
        std::fs::create_dir_all(&staging).unwrap();
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::rename(
            t.join(MANIFESTS_DIR).join(c.manifest_file()),
            staging.join(c.manifest_file()),
        )
        .unwrap();
    }

    /// Every path under `t` with its mode and contents.
    fn snapshot(t: &Path) -> Vec<(PathBuf, u32, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, Vec<u8>)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                let m = std::fs::symlink_metadata(&p).unwrap();
                if m.is_dir() {
                    out.push((p.clone(), m.permissions().mode(), Vec::new()));
                    walk(&p, out);
                } else {
                    out.push((
                        p.clone(),
                        m.permissions().mode(),
                        std::fs::read(&p).unwrap(),
                    ));
                }
            }
        }
        let mut v = Vec::new();
        walk(t, &mut v);
        v.sort();
        v
    }

    /// SPEC 6: the operator view of a clean node is clean (exit 0) and
    /// creates nothing, not even the state directory; with an ID it says
    /// what a fencing check would do.
    /// SPEC 6 (v1.2): a signal at any point of an evidence bundle (before
    /// it, between any two of its entries, or once it is written but not
    /// yet named) leaves nothing at PATH or beside it, and the view still
    /// gives its one document, saying why.
    #[test]
    fn evidence_stopped_at_any_point_leaves_nothing_behind() {
        let t = node_tree("rsa");
        let tmp = t.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let root = Root::open(t.path()).unwrap();
        let live = healthy(&root);
        let g = global(t.path());
        let listing = || {
            let mut v: Vec<String> = std::fs::read_dir(&tmp)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let sigterm = Cancel::new();
        sigterm.cancel();
        let r = view(
            &root,
            &g,
            &Ask {
                evidence: Some("tmp/x.tgz"),
                cancel: Some(&sigterm),
                ..Ask::default()
            },
            &live,
        );
        assert_eq!(r.json()["evidence"]["written"], false, "{:#}", r.json());
        assert_eq!(
            r.json()["evidence"]["error"],
            crate::node::evidence::INTERRUPTED
        );
        assert_ne!(r.code, exit::OK);
        assert!(r
            .text
            .contains("EVIDENCE NOT WRITTEN: interrupted by a signal"));
        assert!(listing().is_empty(), "{:?}", listing());

        // Stopped at the n-th question, for every n until one that completes.
        let shown = view(&root, &g, &Ask::default(), &live).json();
        let document: doc::StatusDocument = serde_json::from_value(shown).unwrap();
        for n in 0.. {
            let asked = std::cell::Cell::new(0usize);
            let stop = || {
                asked.set(asked.get() + 1);
                asked.get() > n
            };
            match crate::node::evidence::write(&root, "tmp/x.tgz", &document, None, &stop) {
                doc::EvidenceView::NotWritten(e) => {
                    assert_eq!(e.error, crate::node::evidence::INTERRUPTED, "at {n}");
                    assert!(listing().is_empty(), "at {n}: {:?}", listing());
                }
                doc::EvidenceView::Written(w) => {
                    assert!(n > 10, "asked only {n} times: {w:?}");
                    assert_eq!(asked.get(), n, "asked once more than it was stopped");
                    assert_eq!(listing(), ["x.tgz"]);
                    break;
                }
            }
        }
    }

    #[test]
    fn the_view_of_a_clean_node_is_clean_and_creates_nothing() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let live = healthy(&root);
        let before = snapshot(t.path());
        let r = view(
            &root,
            &global(t.path()),
            &Ask {
                id: Some(&id("op-1")),
                ..Ask::default()
            },
            &live,
        );
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["clean"], true);
        assert_eq!(r.json()["fencing"]["action"], "abandon");
        // Clean, with one thing to know: the node never saw op-1.
        assert!(
            r.text.starts_with("NODE: CLEAN (1 warning)\n"),
            "{}",
            r.text
        );
        assert!(r.json()["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("operation op-1 is unknown to this node"));
        assert_eq!(snapshot(t.path()), before, "the view changed the node");
    }

    /// SPEC 6: a manifest left staged, or a held lock, makes the node not
    /// clean, naming why; the view still changes nothing.
    #[test]
    fn a_staged_manifest_or_a_held_lock_makes_the_node_not_clean() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::Etcd);
        let root = Root::open(t.path()).unwrap();
        let g = global(t.path());
        let before = snapshot(t.path());
        let r = view(
            &root,
            &g,
            &Ask {
                id: Some(&id("op-1")),
                ..Ask::default()
            },
            &healthy(&root),
        );
        assert_ne!(r.code, exit::OK);
        assert_eq!(r.json()["clean"], false);
        let reasons = r.json()["reasons"].to_string();
        assert!(reasons.contains("etcd"), "{reasons}");
        assert_eq!(r.json()["fencing"]["restore"], serde_json::json!(["etcd"]));
        assert_eq!(snapshot(t.path()), before, "the view changed the node");
        // Put it back; hold the lock instead.
        std::fs::rename(
            t.path().join(STAGING_DIR).join("etcd.yaml"),
            t.path().join(MANIFESTS_DIR).join("etcd.yaml"),
        )
        .unwrap();
        state_dir(t.path());
        let state = StateDir::open(&root).unwrap().unwrap();
        let _held = lock::acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        let r = view(&root, &g, &Ask::default(), &healthy(&root));
        assert_ne!(r.code, exit::OK);
        assert!(
            r.json()["reasons"][0]
                .as_str()
                .is_some_and(|s| s.starts_with("the renewal lock is held by ")),
            "{:#}",
            r.json()["reasons"]
        );
    }
}
