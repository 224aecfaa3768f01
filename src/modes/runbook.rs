//! The renewal (SPEC section 4), V2 and `--legacy-v1`: a sequence of steps,
//! each persisting its phase before it acts, with restoration of a staged
//! manifest on every failure path, and exactly one receipt per V2 operation
//! that got past its own-receipt check.

use crate::contract::cli::Global;
pub use crate::contract::cli::Request;
use crate::contract::{EarlyOutcome, EarlyPhase};
use crate::judge::renew::{self, Ending};
use crate::modes::output::Report;
use crate::node::fsx::Root;
use crate::node::lock;
use crate::node::manifests;
use crate::node::node_pki;
use crate::node::operation::{Operation, Stop, Who};
use crate::node::statedir::Ended;
pub use crate::rules::failure::panic_message;
use crate::rules::failure::{Fail, Success};
use crate::rules::outcome::{exit_code_for, Outcome, Phase};
use crate::rules::receipt::Receipt;
use crate::rules::resume::Progress;
use crate::tools::runtime::Runtime;
use crate::tools::signals::Cancel;
use std::collections::BTreeMap;

mod run;
mod steps;
use run::{Run, RunReport, Seen, Tools};
use steps::Step;

/// A run that stopped before it could look at the node (beyond a read-only
/// look at where the four manifests are). `code`: None for a refusal, which
/// exits 4 when a manifest is not active (an interrupted run left it
/// staged: an operator must act), else 1 (SPEC 7).
fn early_failure(
    root: &Root,
    req: &Request,
    code: Option<u8>,
    outcome: EarlyOutcome,
    phase: EarlyPhase,
    message: String,
) -> Report {
    let m = manifests::placement(root);
    let code = code.unwrap_or_else(|| exit_code_for(Outcome::Failed, m.all_active()));
    let places = m.receipt_locations();
    let (doc, text) = renew::early_failure(req.mode(), req.id(), outcome, phase, &message, &places);
    Report {
        code,
        text,
        doc: Box::new(doc),
    }
}

fn replay_report(r: &Receipt) -> Report {
    let (code, doc, text) = renew::replay(r);
    Report {
        code,
        doc: Box::new(doc),
        text,
    }
}

/// SPEC 4 steps 1 and 2 ended the run before its steps: the lock refused,
/// or this operation's own receipt replayed (or untrusted). The report is
/// made while the lock (when taken) is held; it is released after.
fn stopped(root: &Root, req: &Request, cancel: &Cancel, stop: Stop) -> Report {
    match stop {
        Stop::Replay(r, _lock) => replay_report(&r),
        Stop::OwnReceipt(why, _lock) => {
            let (outcome, phase) = (EarlyOutcome::Failed, EarlyPhase::Receipt);
            early_failure(root, req, None, outcome, phase, why)
        }
        Stop::Refused(lock::Refused { error, held: _lock }) => {
            let (code, outcome, phase, message) = renew::lock_refused(&error, &cancel.why());
            early_failure(root, req, code, outcome, phase, message)
        }
    }
}

/// Run a renewal (V2 when the request has an operation ID, else legacy).
pub fn run(root: &Root, g: &Global, req: &Request, rt: &dyn Runtime, cancel: &Cancel) -> Report {
    let start_clock = g.clock.now();
    let cancelled = || cancel.is_cancelled();
    let mode = crate::modes::output::word(&req.mode());
    let who = Who {
        id: req.id(),
        mode: req.owner_mode(),
        mode_word: &mode,
        lock_timeout: g.lock_timeout,
        cancelled: &cancelled,
        started: start_clock,
        force_threshold: (req.force(), g.threshold_days),
        recovery: req.recovery(),
    };
    let op = match Operation::begin(root, who) {
        Ok(op) => op,
        Err(stop) => return stopped(root, req, cancel, stop),
    };

    let mut run = Run {
        tools: Tools {
            root,
            g,
            rt,
            cancel,
        },
        op,
        report: RunReport::default(),
        seen: Seen::default(),
        step: Step::FIRST,
        start: Progress::Fresh,
    };
    // The restore guard (SPEC 4, v1.1): a panic anywhere in the steps is a
    // failure like any other: `finish` puts a staged manifest back, writes
    // the receipt and reports, all under the lock. Should `finish` itself
    // panic, the last resort still puts every staged manifest back and
    // reports once.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        steps::run_all(&mut run, req)
    }))
    .unwrap_or_else(|payload| {
        let why = panic_message(payload.as_ref());
        tracing::error!(phase = %run.step.phase(), "internal error (a panic): {why}");
        let component = run.op.staged().or(match run.step.phase() {
            Phase::Restart(c) => Some(c),
            _ => None,
        });
        Err(Fail::panic(run.step.phase(), why, component))
    });
    // The lock is released when `run` (its operation) is dropped, after
    // the report was made.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        finish(&mut run, req, result)
    }))
    .unwrap_or_else(|payload| last_resort(&run, req, &panic_message(payload.as_ref())))
}

/// `finish` panicked: put back every manifest staged and not active, write a
/// `failed` receipt if this operation has none, and report once, with as
/// little machinery as possible.
fn last_resort(run: &Run<'_>, req: &Request, why: &str) -> Report {
    tracing::error!("internal error (a panic) while finishing: {why}");
    let phase = run.step.phase();
    let (outcome, message, written) = run.op.last_resort(why, phase, run.did(), run.tools.now());
    let m = manifests::placement(run.tools.root);
    let doc = run.result(
        req,
        &Ending {
            outcome,
            phase: run.step.phase(),
            message: message.clone(),
            notes: Vec::new(),
            failed_component: None,
            receipt_written: written,
            manifests: m.receipt_locations(),
        },
        None,
        run.tools.now(),
    );
    Report {
        code: exit_code_for(outcome, m.all_active()),
        doc: Box::new(doc),
        text: format!("{}: {message}", outcome.as_str().to_uppercase()),
    }
}

fn finish(run: &mut Run<'_>, req: &Request, result: Result<Success, Fail>) -> Report {
    let mut end = stop(run, req, result);
    // The receipt is the commit point; then `done`.
    if end.outcome == Outcome::Renewed {
        crate::crash_point!("renew-before-receipt");
    }
    commit(run, &mut end);
    if end.outcome == Outcome::Renewed {
        let tools = run.tools;
        if let Err(e) = run.op.finish(|| tools.now()) {
            end.message.push_str(&format!("; {e}"));
        }
    }
    let m = manifests::placement(run.tools.root);
    end.manifests = m.receipt_locations();
    let code = exit_code_for(end.outcome, m.all_active());
    let now = run.tools.now();
    let after = if end.outcome == Outcome::Renewed {
        Some(node_pki::read(run.tools.root))
    } else {
        None
    };
    end.message = end.full_message();
    end.notes.clear();
    let doc = run.result(req, &end, after.as_ref(), now);
    Report {
        code,
        doc: Box::new(doc),
        text: result_text(run, req, &end),
    }
}

/// How the steps' result ends the run; on a failure, a staged manifest is
/// put back first (lock held).
fn stop(run: &mut Run<'_>, req: &Request, result: Result<Success, Fail>) -> Ending {
    let mut notes = Vec::new();
    let (outcome, phase, message, failed_component) = match result {
        Ok(Success::Unchanged(msg)) => (Outcome::Unchanged, Phase::Done, msg, None),
        Ok(Success::Renewed) => (
            Outcome::Renewed,
            Phase::Done,
            run.done(req).renewed_message(run.tools.now()),
            None,
        ),
        Err(f) => {
            tracing::warn!(phase = %f.phase, "renewal stopped: {}", f.cause);
            let mut outcome = if f.cancelled() {
                Outcome::Cancelled
            } else {
                Outcome::Failed
            };
            let message = f.message();
            // Restore a staged manifest before anything else (lock held).
            let back = run.op.put_back();
            if !back.all_back {
                outcome = Outcome::FailedNotRestored;
            }
            notes.extend(back.said);
            if let Some(msg) = back.not_restored {
                if !message.contains(&msg) && !notes.contains(&msg) {
                    notes.push(msg);
                }
            }
            (outcome, f.phase, message, f.component)
        }
    };
    Ending {
        outcome,
        phase,
        message,
        notes,
        failed_component,
        receipt_written: false,
        manifests: BTreeMap::new(),
    }
}

/// What a recovery's text ends with (SPEC 11): what had expired, the
/// health seen, and the next steps across the control plane.
fn recovery_text(run: &Run<'_>, req: &Request) -> String {
    let now = run.tools.now();
    let mut text = run.done(req).recovery_head(now);
    let config = run.tools.g.kubeadm_config.as_deref();
    let steps = renew::recovery_steps(now, config);
    crate::judge::advice::render_next(&mut text, &steps, run.tools.g.term.width);
    text
}

/// Write this operation's receipt. No success without its receipt (SPEC 3,
/// v1.1): when it cannot be written the run is `failed` (phase `receipt`),
/// the phase file stays unfinished, and a retry with the same ID resumes
/// and commits.
fn commit(run: &mut Run<'_>, end: &mut Ending) {
    run.leaves_on_resume();
    let message = end.full_message();
    let ended = Ended {
        outcome: end.outcome,
        phase: end.phase,
        message: &message,
        failed_component: end.failed_component,
        did: run.did(),
    };
    let Some(r) = run.op.receipt(ended, run.tools.now()) else {
        return;
    };
    match run.op.commit(&r) {
        Ok(()) => end.receipt_written = true,
        Err(e) => {
            tracing::error!("writing the {} receipt failed: {e}", end.outcome);
            end.receipt_failed(&e.to_string());
        }
    }
}

/// The result as text: outcome, phase, message, what was resumed, the
/// restarts.
fn result_text(run: &Run<'_>, req: &Request, end: &Ending) -> String {
    let mut text = run.done(req).text(end);
    if run.op.phase.recovery && end.outcome == Outcome::Renewed {
        text.push_str(&recovery_text(run, req));
    }
    text
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::print_stderr)] // tests use their temp node directly and say when they skip
mod tests {
    //! The runbook's rules against the test double of the node's runtime
    //! ([`crate::tools::runtime::double`]): a synchronous "kubelet" that derives
    //! containers from where the manifests are, a healthy single-member
    //! etcd, and a kubeadm that succeeds or fails as told. No processes, no
    //! root.
    use super::*;
    use crate::contract::cli::Global;
    use crate::contract::Timestamp;
    use crate::rules::component::Component;
    use crate::rules::opid::OperationId;
    use crate::rules::phase::CA_KEYS;
    use crate::rules::phase::{PhaseState, PhaseV2};
    use crate::rules::pki;
    use crate::tools::runtime::double::{self, Double};
    use std::os::unix::fs::PermissionsExt;

    /// SPEC 3 (a message is at most 512 bytes): what changed the outcome is
    /// kept whole at the end, however long the failure's own words, and
    /// still after the receipt's failure is put in front.
    fn setup(
        kubeadm_ok: bool,
        never_stop: Option<Component>,
    ) -> (tempfile::TempDir, Root, Global, Double) {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let g = Global::for_tests(t.path());
        let mut fake = Double::kubelet(t.path());
        if !kubeadm_ok {
            fake = fake.kubeadm_failing();
        }
        if let Some(c) = never_stop {
            fake = fake.never_stopping(c);
        }
        (t, root, g, fake)
    }

    fn req(id: &str, force: bool) -> Request {
        Request::V2 {
            id: OperationId::parse(id).unwrap(),
            force,
            expect_ca: BTreeMap::new(),
            recovery: false,
        }
    }

    fn restarted(r: &Report) -> Vec<String> {
        r.json()["restarts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["component"].as_str().unwrap().to_string())
            .collect()
    }

    /// SPEC 4 step 10 (v1.2): postflight asks etcd's peer port (its
    /// --listen-peer-urls, here on this host) for the renewed peer.crt; a
    /// port that does not answer, or presents another certificate, fails
    /// the run at postflight with every manifest active.
    #[test]
    fn postflight_proves_the_peer_port_serves_the_renewed_peer_certificate() {
        for bad in [false, true] {
            let (t, root, g, fake) = setup(true, None);
            let etcd = t.path().join("etc/kubernetes/manifests/etcd.yaml");
            let m = std::fs::read_to_string(&etcd).unwrap();
            let m = m.replace(
                "--listen-peer-urls=https://10.0.0.11:2380",
                "--listen-peer-urls=https://127.0.0.1:2380",
            );
            assert!(m.contains("https://127.0.0.1:2380"));
            std::fs::write(&etcd, m).unwrap();
            if bad {
                fake.set_answer("", 2380, Err("connect 127.0.0.1:2380: Connection refused"));
            }
            let r = run(&root, &g, &req("op-peer", true), &fake, &Cancel::new());
            if bad {
                assert_eq!(r.code, 1, "{:#}", r.json());
                assert_eq!(r.json()["phase"], "postflight", "{:#}", r.json());
                let json = r.json();
                let msg = json["message"].as_str().unwrap();
                assert!(msg.contains("etcd's peer port 127.0.0.1:2380"), "{msg}");
            } else {
                assert_eq!(r.code, 0, "{:#}", r.json());
                assert_eq!(r.json()["outcome"], "renewed");
            }
        }
    }

    #[test]
    fn forced_run_restarts_all_four_in_order_and_commits() {
        let (t, root, g, fake) = setup(true, None);
        let r = run(&root, &g, &req("op-1", true), &fake, &Cancel::new());
        assert_eq!(r.code, 0, "{:#}", r.json());
        assert_eq!(
            restarted(&r),
            [
                "etcd",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler"
            ]
        );
        assert_eq!(r.json()["restarts"][0]["newContainerID"], "etcd-1");
        let phase =
            std::fs::read_to_string(t.path().join("var/lib/nvke/k8s-cert-renewal/phase")).unwrap();
        assert!(phase.contains("\"state\": \"done\""));
        assert!(t
            .path()
            .join("var/lib/nvke/k8s-cert-renewal/completed/op-1.json")
            .is_file());
        assert!(!t
            .path()
            .join("etc/kubernetes/nvke-cert-renewal-staging/etcd.yaml")
            .exists());
        // SPEC 4 step 8, "Leaf by leaf" (v1.3): the receipt lists every
        // leaf with its serials and ends, each as the files say.
        let receipt: serde_json::Value = serde_json::from_slice(
            &std::fs::read(
                t.path()
                    .join("var/lib/nvke/k8s-cert-renewal/completed/op-1.json"),
            )
            .unwrap(),
        )
        .unwrap();
        let leaves = receipt["certificates"].as_array().unwrap();
        assert_eq!(leaves.len(), 11, "{receipt:#}");
        let fixture = double::node_tree("rsa");
        let after = crate::node::node_pki::read(&root);
        let before = crate::node::node_pki::read(&Root::open(fixture.path()).unwrap());
        for ((l, a), b) in leaves.iter().zip(&after.leaves).zip(&before.leaves) {
            assert_eq!(l["name"], a.spec.name, "{l}");
            let (a, b) = (a.cert.as_ref().unwrap(), b.cert.as_ref().unwrap());
            assert_eq!(l["serialBefore"], b.serial.as_str(), "{l}");
            assert_eq!(l["serialAfter"], a.serial.as_str(), "{l}");
            assert_ne!(l["serialAfter"], l["serialBefore"]);
            let rfc = crate::rules::clock::rfc3339;
            assert_eq!(l["notAfterBefore"], rfc(b.not_after), "{l}");
            assert_eq!(l["notAfterAfter"], "2028-06-01T00:00:00Z", "{l}");
        }
        // The document's rows carry the same serials.
        for (row, l) in r.json()["certificates"]
            .as_array()
            .unwrap()
            .iter()
            .zip(leaves)
        {
            assert_eq!(row["serialBefore"], l["serialBefore"]);
            assert_eq!(row["serialAfter"], l["serialAfter"]);
        }
    }

    /// SPEC 2 and 4 step 8 (v1.3): super-admin.conf absent before and
    /// after is skipped (ten leaves listed); one that appears while
    /// kubeadm runs is judged like the others and listed with no serial
    /// before.
    #[test]
    fn super_admin_conf_absent_is_skipped_and_one_that_appears_is_listed() {
        const SA: &str = "etc/kubernetes/super-admin.conf";
        for (id, appears) in [("op-absent", false), ("op-appears", true)] {
            let (t, root, g, fake) = setup(true, None);
            std::fs::remove_file(t.path().join(SA)).unwrap();
            let fake = if appears {
                fake.kubeadm_creating(SA)
            } else {
                fake
            };
            let r = run(&root, &g, &req(id, true), &fake, &Cancel::new());
            assert_eq!(r.code, 0, "{id}: {:#}", r.json());
            let receipt: serde_json::Value = serde_json::from_slice(
                &std::fs::read(
                    t.path()
                        .join(format!("var/lib/nvke/k8s-cert-renewal/completed/{id}.json")),
                )
                .unwrap(),
            )
            .unwrap();
            let leaves = receipt["certificates"].as_array().unwrap();
            let sa = leaves.iter().find(|l| l["name"] == "super-admin.conf");
            assert_eq!(leaves.len(), if appears { 11 } else { 10 }, "{id}");
            assert_eq!(sa.is_some(), appears, "{id}");
            if let Some(sa) = sa {
                assert!(
                    sa["serialBefore"].is_null() && sa["notAfterBefore"].is_null(),
                    "{sa}"
                );
                assert!(sa["serialAfter"].is_string(), "{sa}");
            }
        }
    }

    /// The proof reads the backup as the rollback does: a node whose pki
    /// has a group-writable leaf or directory (kept in the copies) still
    /// renews, leaf by leaf.
    #[test]
    fn a_group_writable_leaf_or_directory_still_renews() {
        let (t, root, g, fake) = setup(true, None);
        let pki = t.path().join("etc/kubernetes/pki");
        std::fs::set_permissions(
            pki.join("apiserver.crt"),
            std::fs::Permissions::from_mode(0o664),
        )
        .unwrap();
        std::fs::set_permissions(pki.join("etcd"), std::fs::Permissions::from_mode(0o775)).unwrap();
        let r = run(&root, &g, &req("op-gw", true), &fake, &Cancel::new());
        assert_eq!(r.code, 0, "{:#}", r.json());
    }

    /// SPEC 4 step 8, "Leaf by leaf" (v1.3): a leaf kubeadm left as it
    /// was fails the renewal in `renew-certs`, named; everything is put
    /// back, nothing restarted, no leaf listed in the receipt.
    #[test]
    fn a_leaf_kubeadm_skipped_fails_the_renewal_and_is_rolled_back() {
        let (t, root, g, fake) = setup(true, None);
        let fake = fake.kubeadm_skipping("etc/kubernetes/scheduler.conf");
        let files = [
            "etc/kubernetes/pki/apiserver.crt",
            "etc/kubernetes/admin.conf",
            "etc/kubernetes/scheduler.conf",
        ];
        let read = || files.map(|f| std::fs::read(t.path().join(f)).unwrap());
        let before = read();
        let r = run(&root, &g, &req("op-skip", true), &fake, &Cancel::new());
        let doc = r.json();
        assert_eq!(
            (r.code, doc["phase"].as_str()),
            (1, Some("renew-certs")),
            "{doc:#}"
        );
        let msg = doc["message"].as_str().unwrap();
        assert!(
            msg.starts_with("scheduler.conf was not renewed: its serial ")
                && msg.contains("the backup was put back"),
            "{msg}"
        );
        assert_eq!(read(), before, "rolled back");
        assert!(restarted(&r).is_empty());
        let receipt = std::fs::read_to_string(
            t.path()
                .join("var/lib/nvke/k8s-cert-renewal/completed/op-skip.json"),
        )
        .unwrap();
        assert!(!receipt.contains("\"certificates\""), "{receipt}");
    }

    /// Issue 14: the document says whether this run re-signed the leaves;
    /// a run that only finished another operation's restarts says
    /// "resumed", not "renewed".
    #[test]
    fn resigned_only_when_this_run_renewed_the_certificates() {
        let (_t, root, g, fake) = setup(true, None);
        let r = run(&root, &g, &req("op-fresh", true), &fake, &Cancel::new());
        assert_eq!(
            (r.code, r.json()["resigned"].as_bool()),
            (0, Some(true)),
            "{:#}",
            r.json()
        );
        assert!(
            r.text.starts_with("RENEWED  phase done\nrenewed; "),
            "{}",
            r.text
        );

        let (t, root, g, fake) = setup(true, None);
        let ca = |f: &str| {
            pki::sha256_hex(&std::fs::read(t.path().join("etc/kubernetes/pki").join(f)).unwrap())
        };
        let p = PhaseV2 {
            format: crate::rules::files::PhaseV2Format::V2,
            operation_id: OperationId::parse("op-dead").unwrap(),
            state: PhaseState::RestartPending,
            next_component: Some(Component::KubeScheduler),
            ca_sha256: CA_KEYS.iter().map(|k| (k.to_string(), ca(k))).collect(),
            force: false,
            threshold_days: 30,
            started_at: Timestamp("2026-11-29T23:00:00Z".into()),
            updated_at: Timestamp("2026-11-29T23:10:00Z".into()),
            resumed_from: None,
            recovery: false,
        };
        let state = t.path().join("var/lib/nvke/k8s-cert-renewal");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(state.join("phase"), crate::rules::phase::render_v2(&p)).unwrap();
        std::fs::set_permissions(state.join("phase"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        let r = run(&root, &g, &req("op-next", false), &fake, &Cancel::new());
        assert_eq!(
            (
                r.code,
                r.json()["outcome"].as_str(),
                r.json()["resigned"].as_bool()
            ),
            (0, Some("renewed"), Some(false)),
            "{:#}",
            r.json()
        );
        assert_eq!(fake.calls.renew(), 0);
        assert_eq!(
            r.json()["message"],
            "resumed: finished the restarts of operation op-dead (restarted kube-scheduler one at a time); no certificate re-signed"
        );
        assert!(r.text.starts_with("RESUMED  phase done\n"), "{}", r.text);
        // Nothing due, nothing resumed: unchanged, nothing re-signed.
        let r = run(&root, &g, &req("op-later", false), &fake, &Cancel::new());
        assert_eq!(
            (r.json()["outcome"].as_str(), r.json()["resigned"].as_bool()),
            (Some("unchanged"), Some(false))
        );
    }

    #[test]
    fn legacy_resume_restarts_from_the_persisted_component_only() {
        let (t, root, g, fake) = setup(true, None);
        let state = t.path().join("var/lib/nvke/k8s-cert-renewal");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let ca =
            pki::sha256_hex(&std::fs::read(t.path().join("etc/kubernetes/pki/ca.crt")).unwrap());
        std::fs::write(state.join("phase"), format!("STATE=restart_pending\nCOMPONENT=kube-scheduler\nSTARTED=1764460800\nCA_SHA256={ca}\nPID=4242\n")).unwrap();
        std::fs::set_permissions(state.join("phase"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        let r = run(
            &root,
            &g,
            &Request::Legacy { force: false },
            &fake,
            &Cancel::new(),
        );
        assert_eq!(r.code, 0, "{:#}", r.json());
        assert_eq!(restarted(&r), ["kube-scheduler"]);
        assert_eq!(fake.calls.renew(), 0);
        let phase = std::fs::read_to_string(state.join("phase")).unwrap();
        assert!(
            phase.starts_with("STATE=done\nCOMPONENT=none\nSTARTED=1764460800\n"),
            "{phase}"
        );
    }

    /// SPEC 10, "Bounded reads" (issue 25): the staging preflight puts back
    /// what a dead run left staged without reading any file's contents,
    /// then refuses a hostile stray (the 56 KB alias bomb), naming it,
    /// before anything of its own: etcd is active again, kubeadm never ran.
    #[test]
    fn the_preflight_puts_etcd_back_then_refuses_a_hostile_stray() {
        let (t, root, g, fake) = setup(true, None);
        let manifests = t.path().join("etc/kubernetes/manifests");
        let staging = t.path().join("etc/kubernetes/nvke-cert-renewal-staging");
        std::fs::create_dir(&staging).unwrap();
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::rename(manifests.join("etcd.yaml"), staging.join("etcd.yaml")).unwrap();
        let mut bomb = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  annotations:\n    a: &a [{}]\n    b: [",
            ["x"; 16_000].join(",")
        );
        bomb.push_str(&["*a"; 6000].join(", "));
        bomb.push_str("]\n");
        std::fs::write(manifests.join("bomb.yaml"), bomb).unwrap();
        let r = run(&root, &g, &req("op-bomb", true), &fake, &Cancel::new());
        assert_eq!(r.code, 1, "{:#}", r.json());
        assert_eq!(r.json()["phase"], "staging-conflict", "{:#}", r.json());
        assert_eq!(
            r.json()["message"],
            "/etc/kubernetes/manifests/bomb.yaml is hostile YAML (more than 100000 nodes); refusing to read it"
        );
        assert!(manifests.join("etcd.yaml").is_file());
        assert!(!staging.join("etcd.yaml").exists());
        assert_eq!(fake.calls.renew(), 0);
        assert!(restarted(&r).is_empty());
    }

    #[test]
    fn kubeadm_failure_rolls_back_and_restarts_nothing() {
        let (t, root, g, fake) = setup(false, None);
        let before = std::fs::read(t.path().join("etc/kubernetes/pki/apiserver.crt")).unwrap();
        let r = run(&root, &g, &req("op-2", true), &fake, &Cancel::new());
        assert_eq!(
            (r.code, r.json()["phase"].as_str()),
            (1, Some("renew-certs")),
            "{:#}",
            r.json()
        );
        assert_eq!(
            std::fs::read(t.path().join("etc/kubernetes/pki/apiserver.crt")).unwrap(),
            before
        );
        assert!(restarted(&r).is_empty());
        assert_eq!(
            r.json()["resigned"],
            false,
            "rolled back: nothing re-signed"
        );
    }

    /// SPEC 4 step 8 (v1.1): the rollback puts back owner and group too.
    #[test]
    fn kubeadm_failure_rollback_keeps_owner_group_and_mode() {
        use std::os::unix::fs::MetadataExt;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: chown needs root");
            return;
        }
        let (t, root, g, fake) = setup(false, None);
        let crt = t.path().join("etc/kubernetes/pki/apiserver.crt");
        let conf = t.path().join("etc/kubernetes/admin.conf");
        for (p, mode) in [(&crt, 0o640), (&conf, 0o600)] {
            std::os::unix::fs::chown(p, Some(1000), Some(1000)).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let before = std::fs::read(&crt).unwrap();
        let r = run(&root, &g, &req("op-2", true), &fake, &Cancel::new());
        assert_eq!(
            (r.code, r.json()["phase"].as_str()),
            (1, Some("renew-certs")),
            "{:#}",
            r.json()
        );
        assert_eq!(std::fs::read(&crt).unwrap(), before);
        for (p, mode) in [(&crt, 0o640), (&conf, 0o600)] {
            let m = std::fs::metadata(p).unwrap();
            assert_eq!(
                (m.uid(), m.gid(), m.mode() & 0o7777),
                (1000, 1000, mode),
                "{}",
                p.display()
            );
        }
        assert!(restarted(&r).is_empty());
    }

    #[test]
    fn stop_timeout_puts_the_manifest_back_and_records_failure() {
        let (t, root, g, fake) = setup(true, Some(Component::KubeApiserver));
        let r = run(&root, &g, &req("op-3", true), &fake, &Cancel::new());
        assert_eq!(
            (r.code, r.json()["phase"].as_str()),
            (1, Some("restart:kube-apiserver")),
            "{:#}",
            r.json()
        );
        assert_eq!(restarted(&r), ["etcd"]);
        assert!(t
            .path()
            .join("etc/kubernetes/manifests/kube-apiserver.yaml")
            .is_file());
        let receipt = std::fs::read_to_string(
            t.path()
                .join("var/lib/nvke/k8s-cert-renewal/completed/op-3.json"),
        )
        .unwrap();
        assert!(receipt.contains("\"failedComponent\": \"kube-apiserver\""));
        let phase =
            std::fs::read_to_string(t.path().join("var/lib/nvke/k8s-cert-renewal/phase")).unwrap();
        assert!(
            phase.contains("\"nextComponent\": \"kube-apiserver\""),
            "resume point persisted: {phase}"
        );
    }

    #[test]
    fn cancel_before_work_writes_a_cancelled_receipt() {
        let (t, root, g, fake) = setup(true, None);
        let c = Cancel::new();
        c.cancel();
        let r = run(&root, &g, &req("op-4", true), &fake, &c);
        assert_eq!(
            (r.code, r.json()["outcome"].as_str()),
            (1, Some("cancelled")),
            "{:#}",
            r.json()
        );
        assert!(t
            .path()
            .join("var/lib/nvke/k8s-cert-renewal/completed/op-4.json")
            .is_file());
    }
}
