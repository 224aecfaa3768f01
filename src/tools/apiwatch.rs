//! The local kube-apiserver's `/readyz`, probed in-process every 200 ms
//! while one component restarts (SPEC 7, v1.2: `apiUnavailableMs`).
//!
//! The probe is the gate's own question (pinned CA, admin.conf's client
//! identity, the same judgement), with the port and the identity read once
//! before the manifest is staged; it runs on a scoped thread beside the
//! restart and reads no file after that. Each probe is bounded by
//! [`PROBE_BUDGET`], so stopping the watch waits at most that long.

use crate::node::fsx::Root;
use crate::rules::availability::{longest_unavailable_ms, Probe};
use crate::rules::live::Health;
use crate::tools::runtime::Runtime;
use crate::tools::signals::Cancel;
use crate::tools::{live, targets};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// How often `/readyz` is asked (SPEC 7).
pub const INTERVAL: Duration = Duration::from_millis(200);
/// One probe's bound: a probe that has not answered by then failed (the
/// e2e lab's probes use the same second).
pub const PROBE_BUDGET: Duration = Duration::from_secs(1);

/// A running watch; [`Watch::finish`] stops it and measures.
pub struct Watch<'scope> {
    stop: Sender<()>,
    probes: ScopedJoinHandle<'scope, Option<(Vec<Probe>, u64)>>,
}

impl<'scope> Watch<'scope> {
    /// Start probing now, on a thread of `s`.
    pub fn start<'env>(
        s: &'scope Scope<'scope, 'env>,
        rt: &'env dyn Runtime,
        root: &'env Root,
        now: OffsetDateTime,
        cancel: &'env Cancel,
    ) -> Watch<'scope> {
        let (stop, stopped) = mpsc::channel::<()>();
        // Read once, now: the manifest is staged for part of the watch,
        // while the old container may still serve.
        let target = targets::apiserver_address(root)
            .and_then(|addr| Ok((addr, targets::apiserver_identity(root)?)));
        let probes = s.spawn(move || {
            // Nothing to ask (the gate before this restart read both a
            // moment ago, so only a node changing under us): not measured.
            let (addr, id) = match target {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!("the API's unavailability is not measured: {e}");
                    return None;
                }
            };
            let start = Instant::now();
            let probes = Mutex::new(Vec::new());
            // One probe every INTERVAL, each on its own thread: a probe
            // that hangs for its PROBE_BUDGET does not delay the next, so
            // a window's end is known to within one interval. At most
            // PROBE_BUDGET / INTERVAL + 1 are in flight.
            let end = std::thread::scope(|ps| {
                loop {
                    if cancel.is_cancelled() {
                        break;
                    }
                    let at = start.elapsed();
                    let (id, probes) = (&id, &probes);
                    // A thread that cannot be made (the node out of
                    // resources) asks nothing: no probe at that instant.
                    let _ = std::thread::Builder::new().spawn_scoped(ps, move || {
                        let budget = cancel.bound(PROBE_BUDGET);
                        let ok = matches!(
                            live::apiserver_readyz(rt, addr, id, now, Instant::now() + budget),
                            Ok(Health::Healthy)
                        );
                        if let Ok(mut p) = probes.lock() {
                            p.push(Probe {
                                at_ms: at.as_millis() as u64,
                                ok,
                            });
                        }
                    });
                    let wait = (at + INTERVAL).saturating_sub(start.elapsed());
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        // Stopped, or the watch was dropped.
                        _ => break,
                    }
                }
                // The watch ends when it is stopped; the probes still in
                // flight end within their budget (the scope joins them).
                start.elapsed().as_millis() as u64
            });
            let mut probes = probes.into_inner().ok()?;
            probes.sort_by_key(|p| p.at_ms);
            Some((probes, end))
        });
        Watch { stop, probes }
    }

    /// Stop probing; the longest window of unavailability seen, in ms.
    /// None when it was not measured: nothing to ask, or no probe ran (the
    /// run cancelled at once, or no thread could be made).
    pub fn finish(self) -> Option<u64> {
        let _ = self.stop.send(());
        match self.probes.join() {
            Ok(Some((probes, end_ms))) if !probes.is_empty() => {
                Some(longest_unavailable_ms(&probes, end_ms))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::runtime::double::{self, Double};

    /// A watch over `during` on the node tree at `t`.
    fn watch_on(
        t: &tempfile::TempDir,
        rt: &Double,
        cancel: &Cancel,
        during: impl FnOnce(),
    ) -> Option<u64> {
        let root = Root::open(t.path()).unwrap();
        std::thread::scope(|s| {
            let w = Watch::start(s, rt, &root, OffsetDateTime::now_utc(), cancel);
            during();
            w.finish()
        })
    }

    fn watched(rt: &Double, during: impl FnOnce()) -> Option<u64> {
        watch_on(&double::node_tree("rsa"), rt, &Cancel::new(), during)
    }

    #[test]
    fn an_api_that_answers_throughout_was_never_unavailable() {
        let rt = Double::new();
        assert_eq!(
            watched(&rt, || std::thread::sleep(Duration::from_millis(450))),
            Some(0)
        );
        assert!(rt.calls.probe() >= 2, "asked every 200 ms");
    }

    #[test]
    fn failed_probes_are_measured_from_the_first_to_the_next_answer() {
        let rt = Double::new();
        let ms = watched(&rt, || {
            std::thread::sleep(Duration::from_millis(50));
            rt.set_readyz(500);
            std::thread::sleep(Duration::from_millis(700));
            rt.set_readyz(200);
            std::thread::sleep(Duration::from_millis(450));
        });
        // 500 from about 200 ms to about 800 ms: three or four failed
        // probes, from the first failed one to the next answered one.
        let ms = ms.unwrap();
        assert!((400..=1000).contains(&ms), "{ms}");
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // a test standing in for the staging
    fn the_manifest_staged_during_the_watch_does_not_fail_the_probes() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let rt = Double::new();
        let cancel = Cancel::new();
        let ms = std::thread::scope(|s| {
            let w = Watch::start(s, &rt, &root, OffsetDateTime::now_utc(), &cancel);
            std::fs::remove_file(
                t.path()
                    .join("etc/kubernetes/manifests/kube-apiserver.yaml"),
            )
            .unwrap();
            std::thread::sleep(Duration::from_millis(450));
            w.finish()
        });
        assert_eq!(ms, Some(0));
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // a test taking the port away
    fn nothing_to_ask_is_not_measured() {
        let t = double::node_tree("rsa");
        std::fs::remove_file(
            t.path()
                .join("etc/kubernetes/manifests/kube-apiserver.yaml"),
        )
        .unwrap();
        let rt = Double::new();
        let ms = watch_on(&t, &rt, &Cancel::new(), || {
            std::thread::sleep(Duration::from_millis(250))
        });
        assert_eq!(ms, None);
        assert_eq!(rt.calls.probe(), 0);
    }

    #[test]
    fn a_cancelled_run_starts_no_probe() {
        let rt = Double::new();
        let cancel = Cancel::new();
        cancel.cancel();
        let ms = watch_on(&double::node_tree("rsa"), &rt, &cancel, || {
            std::thread::sleep(Duration::from_millis(250))
        });
        assert_eq!(ms, None);
        assert_eq!(rt.calls.probe(), 0);
    }
}
