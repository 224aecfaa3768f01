//! A renewal's result in words and documents (SPEC 7): what the run did
//! ([`Done`]) and how it ended ([`Ending`]) rendered as the result
//! document and its text, the replay of a receipt, an early failure's.
//! Pure: the driver (`modes::runbook`) gathers the values and prints.

use crate::contract::{
    self, CaSha256, CertificateChange, ConstBool, EarlyOutcome, EarlyPhase, EmptyObject,
    EtcdVoters, LeafName, ManifestLocations, Message, NextStep, Null, RenewEarlyFailure, RenewMode,
    RenewOnly, RenewReplay, RenewResult, Restart, RuntimeEndpointUsed, Timestamp,
};
use crate::node::lock::{HoldError, LockError};
use crate::node::manifests::ManifestsReport;
use crate::node::node_pki::{CaView, PkiReport};
use crate::rules::clock;
use crate::rules::component::Component;
use crate::rules::failure::{restart_failed, Cause, Fail};
use crate::rules::opid::OperationId;
use crate::rules::outcome::{exit, exit_code_for, ManifestLocation, Outcome, Phase};
use crate::rules::phase::ResumedFrom;
use crate::rules::receipt::Receipt;
use crate::rules::resume::Resumed;
use crate::tools::health::{self, GateError, GateOk};
use std::collections::BTreeMap;
use time::OffsetDateTime;

/// What a renewal did, as its result says it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Done<'a> {
    pub mode: RenewMode,
    pub operation_id: Option<&'a OperationId>,
    pub runtime_endpoint: Option<&'a RuntimeEndpointUsed>,
    pub restarts: &'a [Restart],
    /// The certificates before the run touched them.
    pub before: Option<&'a PkiReport>,
    /// The last gate's etcd voters and healthy voters.
    pub etcd: Option<(usize, usize)>,
    /// This run's kubeadm re-signed the leaves (not rolled back).
    pub resigned: bool,
    /// The work is a recovery (SPEC 11).
    pub recovery: bool,
    /// Whose work this run resumed (None: fresh work).
    pub resumed: Option<&'a Resumed>,
    pub resumed_from: Option<&'a ResumedFrom>,
    /// A recovery's health as its postflight observed it (SPEC 11).
    pub health_at_end: Option<&'a str>,
    /// Each leaf as its renewal was proven (the receipt's record, v1.3):
    /// its "before" is the backup's, which a resumed run did not read.
    pub leaves: &'a [crate::rules::files::LeafRenewal],
}

/// How a run ended, as its result reports it.
#[derive(Debug, Clone)]
pub(crate) struct Ending {
    pub outcome: Outcome,
    pub phase: Phase,
    /// What happened; bounded (with `notes`) before it is recorded.
    pub message: String,
    /// What changed the outcome (a manifest not put back): kept whole at
    /// the end when the message is cut to 512 bytes.
    pub notes: Vec<String>,
    pub failed_component: Option<Component>,
    pub receipt_written: bool,
    /// Where the manifests are now.
    pub manifests: BTreeMap<Component, ManifestLocation>,
}

impl Ending {
    /// The message as recorded and printed: bounded, the notes kept.
    pub(crate) fn full_message(&self) -> String {
        full_message(&self.message, &self.notes)
    }

    /// This operation's receipt could not be written (`e`): no success
    /// without its receipt (SPEC 3, v1.1), the run is `failed` (phase
    /// `receipt`); a failure says it has no receipt.
    pub(crate) fn receipt_failed(&mut self, e: &str) {
        let outcome = self.outcome;
        let message = &self.message;
        if outcome.is_success() {
            self.message = format!(
                "NOT {}: the receipt could not be written ({e}); the phase file is left unfinished, so a retry with this operation ID resumes and commits; the run had: {message}",
                outcome.as_str().to_uppercase()
            );
            self.outcome = Outcome::Failed;
            self.phase = Phase::Receipt;
        } else {
            self.message =
                format!("NO RECEIPT: writing the {outcome} receipt failed ({e}); {message}");
        }
    }
}

/// `message` bounded to 512 bytes, the `notes` kept whole at its end.
pub(crate) use crate::rules::receipt::full_message;

impl Done<'_> {
    /// The result document; `after`: the certificates read again after a
    /// renewal; `ca`: the node's CA fingerprints now.
    pub(crate) fn result(
        &self,
        end: &Ending,
        after: Option<&PkiReport>,
        now: OffsetDateTime,
        ca: CaSha256,
    ) -> RenewResult {
        RenewResult {
            mode: self.mode,
            runbook_version: contract::version::RUNBOOK_VERSION.to_string(),
            operation_id: self.operation_id.cloned(),
            outcome: end.outcome,
            phase: end.phase,
            message: Message(end.message.clone()),
            failed_component: end.failed_component,
            replayed: ConstBool,
            receipt_written: end.receipt_written,
            runtime_endpoint: self.runtime_endpoint.cloned(),
            resigned: self.resigned,
            resumed_from: self.resumed_from.cloned(),
            certificates: with_proven_before(cert_rows(self.before, after, now), self.leaves, now),
            ca_sha256: ca,
            manifests: ManifestLocations::from(&end.manifests),
            restarts: self.restarts.to_vec(),
            etcd: self.etcd.map(|(v, h)| EtcdVoters {
                voters: v as u64,
                healthy_voters: h as u64,
            }),
            recovery: self.recovery,
            health_at_end: self.health_at_end.map(|h| Message(h.to_string())),
            duration_ms: 0,
            exit_code: 0,
        }
    }

    /// What a `renewed` run did: "renewed" when it re-signed the leaves,
    /// else "resumed", naming whose restarts it finished.
    pub(crate) fn renewed_message(&self, now: OffsetDateTime) -> String {
        let names: Vec<&str> = self.restarts.iter().map(|r| r.component.name()).collect();
        let restarted = if names.is_empty() {
            "postflight only, nothing restarted".to_string()
        } else {
            format!("restarted {} one at a time", names.join(", "))
        };
        if self.recovery && self.resigned {
            let expired = self.recovered_words(now);
            let what = match expired.split_first() {
                Some((first, [])) => first.clone(),
                Some((first, rest)) => format!("{first} and {} more", rest.len()),
                None => "none any more".to_string(),
            };
            return format!(
                "recovered (--recover-expired): renewed every leaf (expired: {what}); {restarted}, each serving its renewed certificate; health at the end: {}",
                self.health_at_end.unwrap_or("not observed")
            );
        }
        if self.resigned {
            return format!("renewed; {restarted}");
        }
        let whose = match self.resumed {
            Some(Resumed::Other(id)) => format!("operation {id}"),
            Some(Resumed::Legacy) => "unfinished legacy work".to_string(),
            Some(Resumed::Own) | None => "this operation's earlier attempt".to_string(),
        };
        let recovery = if self.recovery {
            format!(
                " (a recovery: no health gate; health at the end: {})",
                self.health_at_end.unwrap_or("not observed")
            )
        } else {
            String::new()
        };
        format!(
            "resumed: finished the restarts of {whose} ({restarted}){recovery}; no certificate re-signed"
        )
    }

    /// The leaves that had expired when a recovery began, longest expired
    /// first (`etcd-peer expired 2027-03-01`).
    pub(crate) fn recovered_words(&self, now: OffsetDateTime) -> Vec<String> {
        self.before
            .map(|b| crate::rules::expiry::expired_words(&b.validity(), now))
            .unwrap_or_default()
    }

    /// What a recovery's text begins its end with (SPEC 11): what had
    /// expired and the health seen; [`recovery_steps`] follow.
    pub(crate) fn recovery_head(&self, now: OffsetDateTime) -> String {
        let mut text = String::new();
        let expired = self.recovered_words(now);
        if !expired.is_empty() {
            text.push_str(&format!("had expired: {}\n", expired.join(", ")));
        }
        if let Some(h) = self.health_at_end {
            text.push_str(&format!("health at the end: {h}\n"));
        }
        text
    }

    /// The result as text: outcome, phase, message, what was resumed, the
    /// restarts (a recovery's end follows: [`Done::recovery_head`]).
    pub(crate) fn text(&self, end: &Ending) -> String {
        // A `renewed` run that re-signed nothing only finished resumed work.
        let word = if end.outcome == Outcome::Renewed && !self.resigned {
            "RESUMED".to_string()
        } else {
            end.outcome.as_str().to_uppercase()
        };
        let mut text = format!("{word}  phase {}\n{}\n", end.phase, end.message);
        if let Some(r) = self.resumed_from {
            text.push_str(&format!(
                "resumed from: {} ({})\n",
                r.operation_id
                    .as_ref()
                    .map(|i| i.as_str())
                    .unwrap_or("legacy work"),
                r.format
            ));
        }
        if !self.restarts.is_empty() {
            let mut rows = vec![vec![
                "RESTARTED".to_string(),
                "OLD CONTAINER".to_string(),
                "NEW CONTAINER".to_string(),
                "STOP".to_string(),
                "HEALTHY".to_string(),
                "TOTAL".to_string(),
            ]];
            for r in self.restarts {
                rows.push(vec![
                    r.component.name().to_string(),
                    health::short(&r.old_container_id).to_string(),
                    health::short(&r.new_container_id).to_string(),
                    format!("{}ms", r.stop_ms),
                    format!("{}ms", r.healthy_ms),
                    format!("{}ms", r.total_ms),
                ]);
            }
            contract::text::table(&mut text, &rows);
        }
        text
    }
}

/// The runbook command a renewal's refusal offers next (SPEC 6, v1.3: a
/// step that works when pasted): the program as invoked, `--root` when it
/// is not `/`, a fresh operation ID (`prefix-STAMP` at `now`: the refused
/// one has its receipt, and pasting it would only replay that), `args`,
/// and the caller's `--kubeadm-config` when it named one. Shell words.
pub(crate) fn fresh_command(
    g: &crate::contract::cli::Global,
    prefix: &str,
    now: OffsetDateTime,
    args: &[&str],
) -> String {
    let id = OperationId::fresh(prefix, now);
    let root = g.root.display().to_string();
    let mut w = vec![g.program.as_str()];
    if !crate::contract::cli::is_host_root(&g.root) {
        w.extend(["--root", root.as_str()]);
    }
    w.extend(["--operation-id", id.as_str()]);
    w.extend(args);
    let config = g.kubeadm_config.as_deref().map(crate::node::paths::node);
    if let Some(c) = &config {
        w.extend(["--kubeadm-config", c.as_str()]);
    }
    w.iter()
        .map(|x| contract::screen::shell_word(x))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A recovery's next steps across the control plane (SPEC 11): the same
/// on every other node whose certificates expired (`kubeadm_config`: the
/// node path this run was given), the gate on each, the admin kubeconfig.
pub(crate) fn recovery_steps(now: OffsetDateTime, kubeadm_config: Option<&str>) -> Vec<NextStep> {
    let id = OperationId::fresh("recover", now);
    let id = id.as_str();
    let mut again = vec![
        "nvke-cert-runbook",
        "--operation-id",
        id,
        "--recover-expired",
    ];
    let config = kubeadm_config.map(crate::node::paths::node);
    if let Some(c) = &config {
        again.extend(["--kubeadm-config", c]);
    }
    let words = |w: &[&str]| {
        w.iter()
            .map(|x| contract::screen::shell_word(x))
            .collect::<Vec<_>>()
            .join(" ")
    };
    vec![
        NextStep {
            what: "run the same on every other control-plane node whose certificates expired, one node at a time (etcd has quorum again once a majority of its voters serve renewed certificates):".into(),
            command: Some(words(&again)),
        },
        NextStep {
            what: "then on each control-plane node the whole health gate must pass:".into(),
            command: Some(words(&["nvke-cert-runbook", "--check"])),
        },
        NextStep {
            what: "copy the renewed /etc/kubernetes/admin.conf to whoever uses it (its client certificate was renewed too)".into(),
            command: None,
        },
    ]
}

/// The certificate rows of a result: each leaf's expiry before and after.
pub(crate) fn cert_rows(
    before: Option<&PkiReport>,
    after: Option<&PkiReport>,
    now: OffsetDateTime,
) -> Vec<CertificateChange> {
    crate::rules::pki::LEAVES
        .iter()
        .zip(LeafName::SPEC_ORDER)
        .map(|(spec, name)| {
            fn find<'p>(
                p: Option<&'p PkiReport>,
                name: &str,
            ) -> Option<&'p crate::rules::pki::ParsedCert> {
                p.and_then(|p| p.leaves.iter().find(|l| l.spec.name == name))
                    .and_then(|l| l.cert.as_ref())
            }
            let find = |p| find(p, spec.name);
            let serial = |p| find(p).map(|c| c.serial.clone());
            let b = find(before).map(|c| c.not_after);
            let a = find(after).map(|c| c.not_after);
            CertificateChange {
                name,
                path: crate::node::paths::node(spec.path),
                not_after_before: b.map(|t| Timestamp(clock::rfc3339(t))),
                not_after_after: a.map(|t| Timestamp(clock::rfc3339(t))),
                days_left_before: b.map(|t| clock::days_until(now, t)),
                days_left_after: a.map(|t| clock::days_until(now, t)),
                serial_before: serial(before),
                serial_after: serial(after),
            }
        })
        .collect()
}

/// The rows' "before" from the proven record where it has the leaf (SPEC
/// 4 step 8, v1.3): the receipt and the document say the same of a run
/// that resumed after its kubeadm (whose own read came after it).
fn with_proven_before(
    mut rows: Vec<CertificateChange>,
    proven: &[crate::rules::files::LeafRenewal],
    now: OffsetDateTime,
) -> Vec<CertificateChange> {
    for row in &mut rows {
        let Some(p) = proven.iter().find(|p| p.name == row.name) else {
            continue;
        };
        row.serial_before = p.serial_before.clone();
        row.not_after_before = p.not_after_before.clone();
        row.days_left_before = p
            .not_after_before
            .as_ref()
            .and_then(|t| clock::parse_rfc3339(&t.0, true).ok())
            .map(|t| clock::days_until(now, t));
    }
    rows
}

/// The replay of this operation's receipt: its exit code, document and
/// text.
pub(crate) fn replay(r: &Receipt) -> (u8, RenewReplay, String) {
    // Every manifest in `manifests/` (`both` included: SPEC 7, v1.1); a
    // refusal of a node with external etcd exits 1 again: its etcd
    // manifest never existed (SPEC 12, v1.3), whatever the receipt lists.
    let external = r.phase == Phase::Topology
        && r.message
            .0
            .starts_with(crate::node::manifests::EXTERNAL_ETCD);
    let active = r
        .manifests
        .iter()
        .filter(|(c, _)| !(external && *c == Component::Etcd))
        .all(|(_, l)| matches!(l, ManifestLocation::Active | ManifestLocation::Both));
    let code = exit_code_for(r.outcome, active);
    let doc = RenewReplay {
        mode: RenewOnly::Renew,
        runbook_version: contract::version::RUNBOOK_VERSION.to_string(),
        operation_id: r.operation_id.clone(),
        outcome: r.outcome,
        phase: r.phase,
        message: r.message.clone(),
        failed_component: r.failed_component,
        replayed: ConstBool,
        receipt_written: ConstBool,
        resigned: ConstBool,
        resumed_from: Null,
        certificates: Vec::new(),
        ca_sha256: r.ca_sha256.clone(),
        manifests: r.manifests.clone(),
        restarts: Vec::new(),
        receipt: r.clone(),
        duration_ms: 0,
        exit_code: 0,
    };
    let text = format!(
        "{} (replayed receipt of operation {}, finished {}): {}",
        r.outcome.as_str().to_uppercase(),
        r.operation_id,
        r.finished_at,
        r.message
    );
    (code, doc, text)
}

/// A run that stopped before it could look at the node: its document and
/// its text, given where the four manifests are (`places`).
/// A renewal the lock refused (SPEC 4 step 1): its exit code (None: the
/// refusal's, 1 or 4), outcome, phase and words. `cancel_why`: what the
/// signal flag says, for a wait a signal or the deadline ended.
pub(crate) fn lock_refused(
    error: &HoldError,
    cancel_why: &str,
) -> (Option<u8>, EarlyOutcome, EarlyPhase, String) {
    match error {
        HoldError::Lock(LockError::Timeout {
            path,
            waited_secs,
            holder,
        }) => (
            Some(exit::LOCK_TIMEOUT),
            EarlyOutcome::Failed,
            EarlyPhase::Lock,
            format!(
                "renewal lock {path} still held after {waited_secs}s by {holder}; nothing was done"
            ),
        ),
        HoldError::Lock(LockError::Cancelled { path, holder }) => (
            None,
            EarlyOutcome::Cancelled,
            EarlyPhase::Lock,
            format!(
                "{cancel_why} while waiting for the renewal lock {path} held by {holder}; nothing was done"
            ),
        ),
        e @ HoldError::LegacyOverV2 { .. } => (
            None,
            EarlyOutcome::Failed,
            EarlyPhase::PhaseFile,
            e.to_string(),
        ),
        e => (None, EarlyOutcome::Failed, EarlyPhase::Lock, e.to_string()),
    }
}

pub(crate) fn early_failure(
    mode: RenewMode,
    operation_id: Option<&OperationId>,
    outcome: EarlyOutcome,
    phase: EarlyPhase,
    message: &str,
    places: &BTreeMap<Component, ManifestLocation>,
) -> (RenewEarlyFailure, String) {
    let doc = RenewEarlyFailure {
        mode,
        runbook_version: contract::version::RUNBOOK_VERSION.to_string(),
        operation_id: operation_id.cloned(),
        outcome,
        phase,
        message: Message::bounded(message),
        replayed: ConstBool,
        receipt_written: ConstBool,
        resigned: ConstBool,
        resumed_from: Null,
        certificates: Vec::new(),
        ca_sha256: EmptyObject {},
        manifests: ManifestLocations::from(places),
        restarts: Vec::new(),
        duration_ms: 0,
        exit_code: 0,
    };
    let outcome = match outcome {
        EarlyOutcome::Failed => Outcome::Failed,
        EarlyOutcome::Cancelled => Outcome::Cancelled,
    };
    let mut text = format!("{}: {}\n", outcome.as_str().to_uppercase(), doc.message.0);
    let not_active: Vec<String> = Component::ALL
        .iter()
        .map(|c| {
            (
                c,
                places.get(c).copied().unwrap_or(ManifestLocation::Missing),
            )
        })
        .filter(|(_, l)| !matches!(l, ManifestLocation::Active | ManifestLocation::Both))
        .map(|(c, l)| format!("{c} {l}"))
        .collect();
    if !not_active.is_empty() {
        text.push_str(&format!(
            "manifests not active: {}\n",
            not_active.join(", ")
        ));
    }
    (doc, text)
}

/// SPEC 4 step 4 on where the manifests are (no file's contents read):
/// the phase and words of a node the renewal refuses, the topology first,
/// then every staging conflict (`mount`: asked last, whether a staging
/// directory is on another file system than `manifests/`).
pub(crate) fn preflight_refusal(
    m: &ManifestsReport,
    mount: impl FnOnce() -> Option<String>,
) -> Option<(Phase, String)> {
    if let Some(e) = &m.manifests_dir_error {
        return Some((Phase::Topology, e.clone()));
    }
    if let Some(why) = m.external_etcd_verdict() {
        return Some((Phase::Topology, why));
    }
    let etcd = &m.manifests[&Component::Etcd];
    if !etcd.active && !etcd.runbook_staged && !etcd.agent_staged && etcd.error.is_none() {
        return Some((
            Phase::Topology,
            "no manifests/etcd.yaml: only stacked etcd is supported; refusing this node".into(),
        ));
    }
    let mut conflicts = Vec::new();
    for (c, v) in &m.manifests {
        if let Some(e) = &v.error {
            conflicts.push(e.clone());
        } else if v.agent_staged {
            conflicts.push(format!(
                "{c} manifest is in the node agent's staging directory {}",
                m.agent_staging.path
            ));
        } else if v.active && v.runbook_staged {
            conflicts.push(format!(
                "{c} manifest is both active and staged in {}: keep exactly one copy",
                m.runbook_staging.path
            ));
        } else if !v.active && !v.runbook_staged {
            return Some((
                Phase::Topology,
                format!(
                    "{c} manifest is missing: this is not a complete kubeadm control-plane node"
                ),
            ));
        }
    }
    for e in [&m.runbook_staging.error, &m.agent_staging.error]
        .into_iter()
        .flatten()
    {
        conflicts.push(e.clone());
    }
    for name in &m.runbook_staging.unexpected {
        conflicts.push(format!(
            "unexpected entry {}/{name} in the runbook's staging directory",
            m.runbook_staging.path
        ));
    }
    conflicts.extend(mount());
    (!conflicts.is_empty()).then(|| (Phase::StagingConflict, conflicts.join("; ")))
}

/// SPEC 4 step 5 on the CAs as read, valid `now`: CAs are never rotated
/// here, so leaves renewed under a CA that is not valid now could never be
/// trusted.
pub(crate) fn ca_not_valid(cas: &[CaView], now: OffsetDateTime) -> Option<String> {
    for ca in cas {
        let Some(cert) = &ca.cert else { continue };
        let path = crate::node::paths::node(&ca.id.cert_path());
        if cert.not_after <= now {
            return Some(format!(
                "CA {} ({path}) expired at {}: CAs are never renewed here; rotate it first",
                ca.id.key(),
                clock::rfc3339(cert.not_after)
            ));
        }
        if cert.not_before > now {
            return Some(format!(
                "CA {} ({path}) is not valid until {}: check the node's clock",
                ca.id.key(),
                clock::rfc3339(cert.not_before)
            ));
        }
    }
    None
}

/// SPEC 4 step 5 on the CA fingerprints `now`: those the controller
/// expects (`--expect-ca-sha256`), then those the resumed work recorded.
pub(crate) fn ca_changed(
    now: &BTreeMap<String, String>,
    expected: &BTreeMap<String, String>,
    recorded: &BTreeMap<String, String>,
) -> Option<String> {
    for (name, want) in expected {
        if now.get(name) != Some(want) {
            return Some(format!(
                "CA {name} has sha256 {}, expected {want}",
                now.get(name).cloned().unwrap_or_default()
            ));
        }
    }
    for (name, want) in recorded {
        if now.get(name) != Some(want) {
            return Some(format!(
                "CA {name} changed since the resumed work began: sha256 {} now, {want} recorded",
                now.get(name).cloned().unwrap_or_default()
            ));
        }
    }
    None
}

/// What the health gate's error `e` stops a run as, at `component` (None:
/// before or after the restarts); `why`: what the signal flag says, for a
/// cancellation.
pub(crate) fn gate_failure(
    e: GateError,
    component: Option<Component>,
    why: impl FnOnce() -> String,
) -> Fail {
    match e {
        GateError::Cancelled => Fail::cancel(why(), component),
        // A component restarted earlier that crashed since: its
        // restart is what failed.
        GateError::Structural {
            phase: Phase::Restart(crashed),
            message,
        } => restart_failed(crashed, message),
        GateError::Structural { phase, message } => Fail {
            phase,
            cause: Cause::Unhealthy(message),
            component,
        },
        GateError::TimedOut { message } => Fail {
            phase: component.map(Phase::Restart).unwrap_or(Phase::Health),
            cause: Cause::Unhealthy(message),
            component,
        },
    }
}

/// What a recovery's last look at the whole local gate saw (SPEC 11:
/// reported, not required); None: a signal or the deadline stopped it.
pub(crate) fn health_seen(r: &Result<GateOk, GateError>) -> Option<String> {
    match r {
        Ok(ok) => Some(format!(
            "the whole local health gate passes (etcd: {} of {} voters healthy)",
            ok.etcd_healthy_voters, ok.etcd_voters
        )),
        Err(GateError::Cancelled) => None,
        Err(GateError::Structural { message, .. }) | Err(GateError::TimedOut { message }) => {
            Some(format!("not healthy yet: {message}"))
        }
    }
}

/// Why fresh, unforced work with no leaf due ends `unchanged` (SPEC 4
/// step 6), naming the soonest leaf.
pub(crate) fn nothing_due(pki: &PkiReport, now: OffsetDateTime, threshold_days: u32) -> String {
    let soonest = pki
        .soonest_leaf(now)
        .map(|(n, d)| format!(" (soonest: {n} in {d} days)"))
        .unwrap_or_default();
    format!(
        "no leaf expires within {threshold_days} days{soonest}; nothing renewed, nothing restarted"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notes_survive_the_cut() {
        let mut end = Ending {
            outcome: Outcome::FailedNotRestored,
            phase: Phase::Restart(Component::Etcd),
            message: format!("kubeadm said {}", "x".repeat(900)),
            notes: vec![
                "putting etcd back FAILED: EIO".into(),
                "kube-apiserver not restored".into(),
            ],
            failed_component: Some(Component::Etcd),
            receipt_written: false,
            manifests: BTreeMap::new(),
        };
        let m = end.full_message();
        assert!(m.len() <= 512);
        assert!(m.starts_with("kubeadm said x"), "{m}");
        assert!(
            m.ends_with("...; putting etcd back FAILED: EIO; kube-apiserver not restored"),
            "{m}"
        );
        end.message = format!(
            "NO RECEIPT: writing the receipt failed (EIO); {}",
            end.message
        );
        let m = end.full_message();
        assert!(
            m.starts_with("NO RECEIPT: ") && m.ends_with("not restored"),
            "{m}"
        );
        end.notes.clear();
        assert_eq!(
            end.full_message(),
            crate::rules::receipt::bounded_message(&end.message)
        );
    }

    /// No success without its receipt (SPEC 3, v1.1): a success whose
    /// receipt could not be written is `failed` at phase `receipt`; a
    /// failure keeps its outcome and says it has no receipt.
    #[test]
    fn a_receipt_not_written_is_said() {
        let mut end = Ending {
            outcome: Outcome::Renewed,
            phase: Phase::Done,
            message: "renewed; restarted etcd one at a time".into(),
            notes: Vec::new(),
            failed_component: None,
            receipt_written: false,
            manifests: BTreeMap::new(),
        };
        end.receipt_failed("EIO");
        assert_eq!((end.outcome, end.phase), (Outcome::Failed, Phase::Receipt));
        assert!(
            end.message
                .starts_with("NOT RENEWED: the receipt could not be written (EIO);")
                && end
                    .message
                    .ends_with("the run had: renewed; restarted etcd one at a time"),
            "{}",
            end.message
        );
        let mut end = Ending {
            outcome: Outcome::Failed,
            phase: Phase::Health,
            message: "unhealthy".into(),
            ..end
        };
        end.receipt_failed("EIO");
        assert_eq!((end.outcome, end.phase), (Outcome::Failed, Phase::Health));
        assert_eq!(
            end.message,
            "NO RECEIPT: writing the failed receipt failed (EIO); unhealthy"
        );
    }

    /// An early failure says its outcome and the manifests not active.
    #[test]
    fn an_early_failure_names_the_manifests_not_active() {
        let places: BTreeMap<_, _> = Component::ALL
            .into_iter()
            .map(|c| (c, ManifestLocation::Active))
            .chain([(Component::Etcd, ManifestLocation::Staged)])
            .collect();
        let (doc, text) = early_failure(
            RenewMode::Renew,
            None,
            EarlyOutcome::Cancelled,
            EarlyPhase::Lock,
            "SIGTERM while waiting",
            &places,
        );
        assert_eq!(doc.message.0, "SIGTERM while waiting");
        assert_eq!(
            text,
            format!(
                "CANCELLED: SIGTERM while waiting\nmanifests not active: etcd {}\n",
                ManifestLocation::Staged
            )
        );
    }

    /// The CA fingerprints are held to what the controller expects first,
    /// then to what the resumed work recorded.
    #[test]
    fn a_changed_ca_is_named_with_both_fingerprints() {
        let map = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let now = map(&[("ca.crt", "aa"), ("etcd/ca.crt", "bb")]);
        assert_eq!(ca_changed(&now, &map(&[]), &now), None);
        assert_eq!(
            ca_changed(&now, &map(&[("ca.crt", "cc")]), &map(&[("ca.crt", "dd")])).unwrap(),
            "CA ca.crt has sha256 aa, expected cc"
        );
        assert_eq!(
            ca_changed(&now, &map(&[]), &map(&[("front-proxy-ca.crt", "ee")])).unwrap(),
            "CA front-proxy-ca.crt changed since the resumed work began: sha256  now, ee recorded"
        );
    }

    /// The gate's errors stop a run where they were seen: a restarted
    /// component that crashed is its restart's failure; a timeout is the
    /// component's restart, or the gate's before the restarts.
    #[test]
    fn the_gate_errors_stop_a_run_where_they_were_seen() {
        let why = || "SIGTERM".to_string();
        let c = gate_failure(GateError::Cancelled, Some(Component::Etcd), why);
        assert!(c.cancelled() && c.component == Some(Component::Etcd));
        let crashed = GateError::Structural {
            phase: Phase::Restart(Component::KubeScheduler),
            message: "crashed".into(),
        };
        let f = gate_failure(crashed, None, why);
        assert_eq!(f.phase, Phase::Restart(Component::KubeScheduler));
        assert_eq!(f.component, Some(Component::KubeScheduler));
        let timed_out = |c| {
            let e = GateError::TimedOut {
                message: "slow".into(),
            };
            gate_failure(e, c, why)
        };
        assert_eq!(timed_out(None).phase, Phase::Health);
        let f = timed_out(Some(Component::Etcd));
        assert_eq!(f.phase, Phase::Restart(Component::Etcd));
        assert_eq!(f.cause, Cause::Unhealthy("slow".into()));
        assert_eq!(health_seen(&Err(GateError::Cancelled)), None);
        assert_eq!(
            health_seen(&Err(GateError::TimedOut {
                message: "etcd: no quorum".into()
            }))
            .unwrap(),
            "not healthy yet: etcd: no quorum"
        );
    }
}
