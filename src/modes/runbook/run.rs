//! The renewal's context, made small: what every step works with
//! ([`Tools`]: the node, the flags, the runtime, the signal flag), the
//! gate's memory between steps ([`Seen`]), what a step found ([`Found`]),
//! and the run that folds it in ([`Run`]: the transaction on the node
//! `node::operation::Operation`, the report). The request is a parameter
//! wherever it is read, from `modes::runbook::run` down to the steps. The steps
//! (`steps/`) are plain functions over these, each signature saying what
//! it reads and writes; the driver is `modes::runbook`.

use crate::contract::cli::{Global, Request};
use crate::contract::{CaSha256, RenewResult, Restart};
use crate::judge::renew::{self, Done, Ending};
use crate::node::fsx::Root;
use crate::node::node_pki::{self, PkiReport};
use crate::node::operation::Operation;
use crate::node::statedir::Did;
use crate::rules::component::Component;
use crate::rules::failure::{fail, Fail};
use crate::rules::files::LeafRenewal;
use crate::rules::resume::Progress;
use crate::tools::health::{self, GateError, GateOk, Health};
use crate::tools::runtime::Runtime;
use crate::tools::signals::Cancel;
use std::time::Instant;

use super::steps::step::Step;

/// Stopped by a signal or the controller's deadline, as the flag says it.
pub(in crate::modes::runbook) fn cancelled(cancel: &Cancel, component: Option<Component>) -> Fail {
    Fail::cancel(cancel.why(), component)
}

/// What every step works with: the node, the flags, the runtime and the
/// signal flag.
#[derive(Clone, Copy)]
pub(in crate::modes::runbook) struct Tools<'a> {
    pub(in crate::modes::runbook) root: &'a Root,
    pub(in crate::modes::runbook) g: &'a Global,
    pub(in crate::modes::runbook) rt: &'a dyn Runtime,
    pub(in crate::modes::runbook) cancel: &'a Cancel,
}

impl Tools<'_> {
    pub(in crate::modes::runbook) fn now(&self) -> time::OffsetDateTime {
        self.g.clock.now()
    }

    pub(in crate::modes::runbook) fn check_cancel(
        &self,
        component: Option<Component>,
    ) -> Result<(), Fail> {
        if self.cancel.is_cancelled() {
            Err(cancelled(self.cancel, component))
        } else {
            Ok(())
        }
    }

    /// The health questions, with what this run has seen.
    pub(in crate::modes::runbook) fn health<'s>(&'s self, seen: &'s Seen) -> Health<'s> {
        Health {
            rt: self.rt,
            root: self.root,
            cancel: self.cancel,
            now: self.now(),
            sandboxes: &seen.sandboxes,
            stay: &seen.stay,
        }
    }

    /// A gate that did not pass, as the step's failure.
    pub(in crate::modes::runbook) fn gate_fail(
        &self,
        e: GateError,
        component: Option<Component>,
    ) -> Fail {
        renew::gate_failure(e, component, || self.cancel.why())
    }

    /// The commands a refusal offers next, each under a fresh operation ID
    /// (`recover-STAMP`, `manual-STAMP`; SPEC 6, v1.3): the recovery and a
    /// renewal.
    pub(in crate::modes::runbook) fn fresh_commands(&self) -> (String, String) {
        let now = self.now();
        (
            renew::fresh_command(self.g, "recover", now, &["--recover-expired"]),
            renew::fresh_command(self.g, "manual", now, &[]),
        )
    }
}

/// The gate's memory between steps: what the restarts, the later gates
/// and the postflight ask again.
#[derive(Default)]
pub(in crate::modes::runbook) struct Seen {
    /// The last health gate that passed, and when; cleared by every move
    /// and by the renewal of the certificates.
    pub(in crate::modes::runbook) last_gate: Option<(Instant, GateOk)>,
    /// The last gate's etcd voters and healthy voters (the result says
    /// them).
    pub(in crate::modes::runbook) etcd: Option<(usize, usize)>,
    /// Pod sandboxes seen by the waits and gates of this run.
    pub(in crate::modes::runbook) sandboxes: health::Sandboxes,
    /// Each component this run restarted and the container its restart
    /// started: every later gate checks it still runs (SPEC 4 step 7,
    /// v1.2).
    pub(in crate::modes::runbook) stay: Vec<(Component, String)>,
    /// When the last restart's new container was seen running.
    pub(in crate::modes::runbook) last_restart: Option<Instant>,
}

/// What a step found; the table's loop folds it into the run.
pub(in crate::modes::runbook) enum Found {
    Nothing,
    /// Step 3: where the work starts.
    Start(Progress),
    /// Step 6: the certificates before the run touches them.
    Before(PkiReport),
    /// Step 6: nothing is due (the certificates, and what was found): the
    /// run ends `unchanged`.
    Unchanged(PkiReport, String),
    /// Step 9: one component restarted.
    Restarted(Restart),
    /// A recovery's last look: the health it ends with (SPEC 11).
    HealthAtEnd(String),
}

/// What the steps found that the result prints.
#[derive(Default)]
pub(in crate::modes::runbook) struct RunReport {
    pub(in crate::modes::runbook) restarts: Vec<Restart>,
    /// The certificates before the run touched them.
    pub(in crate::modes::runbook) before: Option<PkiReport>,
    /// This run's kubeadm re-signed the leaves (and they were not rolled
    /// back).
    pub(in crate::modes::runbook) resigned: bool,
    /// A recovery's health as its postflight observed it (SPEC 11).
    pub(in crate::modes::runbook) health_at_end: Option<String>,
    /// Each leaf proven renewed (SPEC 4 step 8, "Leaf by leaf", v1.3): by
    /// this run's kubeadm, or, for work resumed after it, proven again
    /// from the backup ([`Run::leaves_on_resume`]).
    pub(in crate::modes::runbook) leaves: Vec<LeafRenewal>,
}

pub(in crate::modes::runbook) struct Run<'a> {
    pub(in crate::modes::runbook) tools: Tools<'a>,
    /// The transaction on the node: the lock, the phase file, the staged
    /// manifest, the receipt (`node::operation`).
    pub(in crate::modes::runbook) op: Operation<'a>,
    pub(in crate::modes::runbook) report: RunReport,
    pub(in crate::modes::runbook) seen: Seen,
    /// The step the run is in: its phase is what a panic is reported as.
    pub(in crate::modes::runbook) step: Step,
    /// Where the work starts, as the phase file says (step 3).
    pub(in crate::modes::runbook) start: Progress,
}

impl Run<'_> {
    /// What this run did, for its own receipt: the restarts it made (SPEC
    /// 7, v1.2, as its document lists them); a recovery says so, with the
    /// health it saw at its end (SPEC 11).
    pub(in crate::modes::runbook) fn did(&self) -> Did<'_> {
        Did {
            restarts: &self.report.restarts,
            recovery: self.op.phase.recovery,
            health_at_end: self.report.health_at_end.as_deref(),
            certificates: &self.report.leaves,
        }
    }

    /// Work resumed after its kubeadm (`restart_pending`): the leaves it
    /// renewed are proven again, the backup against the node, so its
    /// receipt lists them too. Nothing when no backup of this operation's
    /// exists (work taken over from another) or the proof fails now (said
    /// in the log: the receipt then lists none).
    pub(in crate::modes::runbook) fn leaves_on_resume(&mut self) {
        if !self.report.leaves.is_empty() || !matches!(self.start, Progress::Restart(_)) {
            return;
        }
        let before = match self.op.backed_up() {
            Ok(Some(b)) => node_pki::backed_up_leaves(&b),
            Ok(None) => Err("no backup of this operation's".to_string()),
            Err(e) => Err(e.to_string()),
        };
        let proven = before.and_then(|b| {
            node_pki::prove_leaves(&node_pki::read(self.tools.root), &b).map_err(|d| d.join("; "))
        });
        match proven {
            Ok(r) => self.report.leaves = r.leaves,
            Err(e) => tracing::warn!(
                "the receipt lists no leaves: the renewal this run resumed cannot be proven again ({e})"
            ),
        }
    }

    /// What this run did for `req`, as its result says it.
    pub(in crate::modes::runbook) fn done<'s>(&'s self, req: &'s Request) -> Done<'s> {
        Done {
            mode: req.mode(),
            operation_id: req.id(),
            runtime_endpoint: self.tools.rt.endpoint(),
            restarts: &self.report.restarts,
            before: self.report.before.as_ref(),
            etcd: self.seen.etcd,
            resigned: self.report.resigned,
            recovery: self.op.phase.recovery,
            resumed: self.op.phase.resumed.as_ref(),
            resumed_from: self.op.phase.resumed_from.as_ref(),
            health_at_end: self.report.health_at_end.as_deref(),
            leaves: &self.report.leaves,
        }
    }

    /// The result document; `after`: the certificates read again after a
    /// renewal.
    pub(in crate::modes::runbook) fn result(
        &self,
        req: &Request,
        end: &Ending,
        after: Option<&PkiReport>,
        now: time::OffsetDateTime,
    ) -> RenewResult {
        let ca = node_pki::ca_fingerprints(&node_pki::read_cas(self.tools.root));
        self.done(req).result(end, after, now, CaSha256::from(&ca))
    }
}

/// Persist the phase (`node::operation::Operation::record`), as a step's
/// failure.
pub(in crate::modes::runbook) fn record(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    progress: Progress,
) -> Result<(), Fail> {
    op.record(progress, || t.now())
        .map_err(|e| fail(e.phase(), e.to_string()))
}
