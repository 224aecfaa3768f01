//! What a component serves is the renewed certificate on disk: asked by
//! the postflight, and after each of a recovery's restarts.

use crate::modes::runbook::{cancelled, Run};
use crate::rules::component::Component;
use crate::rules::failure::{fail, Cause, Fail};
use crate::rules::outcome::Phase;
use crate::tools::served::{Asker, NotServed};
use std::time::Duration;

impl Run<'_> {
    /// Who asks what a component serves: this run's tools, node, signal
    /// flag and clock.
    fn asker(&self) -> Asker<'_> {
        Asker {
            rt: self.env.rt,
            root: self.env.root,
            cancel: self.env.cancel,
            clock: &self.env.g.clock,
        }
    }

    /// Not served, as the postflight's failure.
    fn not_served(&self, e: NotServed) -> Fail {
        match e {
            NotServed::Cancelled => cancelled(self.env.cancel, None),
            NotServed::Said(m) => fail(Phase::Postflight, m),
            NotServed::NotRenewed { what, path } => Fail {
                phase: Phase::Postflight,
                cause: Cause::NotRenewed { what, path },
                component: None,
            },
        }
    }

    /// What `c` serves is the renewed certificate on disk (SPEC 4 step 10):
    /// kube-apiserver its `apiserver.crt` on its secure port, etcd its
    /// `server.crt` on its client port and `peer.crt` on its peer port;
    /// nothing for the other two. One look, each probe within `budget`
    /// (and the controller's deadline); a failure is the postflight's.
    pub(in crate::modes::runbook) fn serves_renewed(
        &self,
        c: Component,
        budget: Duration,
    ) -> Result<(), Fail> {
        match c {
            Component::KubeApiserver => self
                .asker()
                .apiserver(budget)
                .map_err(|e| self.not_served(e)),
            Component::Etcd => (self.table().way().etcd_serves)(self, budget),
            _ => Ok(()),
        }
    }

    /// The renewal's etcd serves the renewed certificates on its client
    /// and its peer port.
    pub(in crate::modes::runbook) fn etcd_serves(&self, budget: Duration) -> Result<(), Fail> {
        self.etcd_client_served(budget)?;
        self.peer_served(budget)
    }

    /// etcd's client port serves the renewed `server.crt`.
    pub(in crate::modes::runbook) fn etcd_client_served(
        &self,
        budget: Duration,
    ) -> Result<(), Fail> {
        let a = self.asker();
        a.etcd_client(budget).map_err(|e| self.not_served(e))
    }

    /// etcd's peer port serves the renewed `peer.crt` (SPEC 4 step 10, v1.2).
    pub(in crate::modes::runbook) fn peer_served(&self, budget: Duration) -> Result<(), Fail> {
        let a = self.asker();
        a.etcd_peer(budget).map_err(|e| self.not_served(e))
    }
}
