//! The renewal's context: what a run works with ([`Env`]), its transaction
//! on the node ([`Run::op`], `node::operation`), what the steps found
//! ([`RunReport`]) and the gate's memory between steps. The steps
//! (`steps/`) are methods on [`Run`]; the driver is `modes::runbook`.

use crate::contract::cli::{Global, Request};
use crate::contract::{CaSha256, RenewResult, Restart};
use crate::judge::renew::{self, Done, Ending};
use crate::node::fsx::Root;
use crate::node::node_pki::{self, PkiReport};
use crate::node::operation::Operation;
use crate::node::statedir::Did;
use crate::rules::component::Component;
use crate::rules::failure::{fail, Fail, Progress};
use crate::rules::resume::Start;
use crate::tools::health::{self, GateOk};
use crate::tools::runtime::Runtime;
use crate::tools::signals::Cancel;
use std::time::Instant;

use super::steps::Step;

/// Stopped by a signal or the controller's deadline, as the flag says it.
pub(in crate::modes::runbook) fn cancelled(cancel: &Cancel, component: Option<Component>) -> Fail {
    Fail::cancel(cancel.why(), component)
}

/// What a run works with: the node, the flags, the tools, the signal flag
/// and the request.
#[derive(Clone, Copy)]
pub(in crate::modes::runbook) struct Env<'a> {
    pub(in crate::modes::runbook) root: &'a Root,
    pub(in crate::modes::runbook) g: &'a Global,
    pub(in crate::modes::runbook) rt: &'a dyn Runtime,
    pub(in crate::modes::runbook) cancel: &'a Cancel,
    pub(in crate::modes::runbook) req: &'a Request,
}

impl Env<'_> {
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
}

/// What the steps found that the result prints.
#[derive(Default)]
pub(in crate::modes::runbook) struct RunReport {
    pub(in crate::modes::runbook) restarts: Vec<Restart>,
    /// The certificates before the run touched them.
    pub(in crate::modes::runbook) before: Option<PkiReport>,
    /// The last gate's etcd voters and healthy voters.
    pub(in crate::modes::runbook) etcd: Option<(usize, usize)>,
    /// This run's kubeadm re-signed the leaves (and they were not rolled
    /// back).
    pub(in crate::modes::runbook) resigned: bool,
    /// A recovery's health as its postflight observed it (SPEC 11).
    pub(in crate::modes::runbook) health_at_end: Option<String>,
}

pub(in crate::modes::runbook) struct Run<'a> {
    pub(in crate::modes::runbook) env: Env<'a>,
    /// The transaction on the node: the lock, the phase file, the staged
    /// manifest, the receipt (`node::operation`).
    pub(in crate::modes::runbook) op: Operation<'a>,
    pub(in crate::modes::runbook) report: RunReport,
    /// The step the run is in: its phase is what a panic is reported as.
    pub(in crate::modes::runbook) step: Step,
    /// Where the work starts, as the phase file says (step 3).
    pub(in crate::modes::runbook) start: Start,
    /// The last health gate that passed, and when; cleared by every move
    /// and by the renewal of the certificates.
    pub(in crate::modes::runbook) last_gate: Option<(Instant, GateOk)>,
    /// Pod sandboxes seen by the waits and gates of this run.
    pub(in crate::modes::runbook) sandboxes: health::Sandboxes,
    /// Each component this run restarted, the container its restart
    /// started, and when that container was seen running: every later gate
    /// checks it still runs (SPEC 4 step 7, v1.2).
    pub(in crate::modes::runbook) stay: Vec<(Component, String)>,
    pub(in crate::modes::runbook) last_restart: Option<Instant>,
}

impl Run<'_> {
    /// Persist the phase (`node::statedir::PhaseWriter::record`).
    pub(in crate::modes::runbook) fn record(&mut self, progress: Progress) -> Result<(), Fail> {
        let env = self.env;
        self.op
            .record(progress, || env.now())
            .map_err(|e| fail(e.phase(), e.to_string()))
    }

    /// What this run did, for its own receipt: the restarts it made (SPEC
    /// 7, v1.2, as its document lists them); a recovery says so, with the
    /// health it saw at its end (SPEC 11).
    pub(in crate::modes::runbook) fn did(&self) -> Did<'_> {
        Did {
            restarts: &self.report.restarts,
            recovery: self.op.phase.recovery,
            health_at_end: self.report.health_at_end.as_deref(),
        }
    }

    /// What this run did, as its result says it.
    pub(in crate::modes::runbook) fn done(&self) -> Done<'_> {
        Done {
            mode: self.env.req.mode(),
            operation_id: self.env.req.id(),
            runtime_endpoint: self.env.rt.endpoint(),
            restarts: &self.report.restarts,
            before: self.report.before.as_ref(),
            etcd: self.report.etcd,
            resigned: self.report.resigned,
            recovery: self.op.phase.recovery,
            resumed: self.op.phase.resumed.as_ref(),
            resumed_from: self.op.phase.resumed_from.as_ref(),
            health_at_end: self.report.health_at_end.as_deref(),
        }
    }

    /// The result document; `after`: the certificates read again after a
    /// renewal.
    pub(in crate::modes::runbook) fn result(
        &self,
        end: &Ending,
        after: Option<&PkiReport>,
        now: time::OffsetDateTime,
    ) -> RenewResult {
        let ca = node_pki::ca_fingerprints(&node_pki::read_cas(self.env.root));
        self.done().result(end, after, now, CaSha256::from(&ca))
    }
}

impl Run<'_> {
    /// The commands a refusal of this run offers next, each under a fresh
    /// operation ID (`recover-STAMP`, `manual-STAMP`; SPEC 6, v1.3): the
    /// recovery and a renewal.
    pub(in crate::modes::runbook) fn fresh_commands(&self) -> (String, String) {
        let now = self.env.now();
        (
            renew::fresh_command(self.env.g, "recover", now, &["--recover-expired"]),
            renew::fresh_command(self.env.g, "manual", now, &[]),
        )
    }
}
