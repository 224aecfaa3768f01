//! nvke-cert-runbook: renews kubeadm leaf certificates on one control-plane
//! node and restarts its static pods one at a time. See SPEC, README and docs/.
//!
//! # The map
//!
//! One folder per layer; each imports only from the layers above it in this
//! list (tests aside: their doubles and fixtures sit where they are used).
//!
//! - [`contract`]: one type per JSON document printed and per JSON file read
//!   or written (`contract::RenewResult`, `CheckDocument`, `StatusDocument`,
//!   `FenceDocument`, `Receipt`, `PhaseV2File`, `LockOwnerFile`, ...), from
//!   which `embedded/schema/` is generated (feature `schema`), and the
//!   versions. The state files' types and the documents' building blocks
//!   (checked strings, closed vocabularies) are defined on the floor below,
//!   in `rules::files` and `rules::values`, and re-exported here: the
//!   contract uses the rules, never the other way. Also the rest of what
//!   the controller and the operator are promised: the command line's
//!   grammar (`contract::cli`: argv to a typed invocation, the renewal's
//!   `Request`, the help pages)
//!   and the text view rendered from the documents' values
//!   (`contract::text`: escaped cells, aligned tables; `contract::screen`:
//!   fitted to the terminal).
//! - [`rules`]: pure decisions on values, parsed from bytes: operation IDs,
//!   components, outcomes and phases, the phase file, receipts, the resume
//!   rule (`rules::resume::resume`), PKI, what crictl and etcdctl print and
//!   the etcd quorum judgement, `--check`'s verdict (`rules::verdict`), the
//!   fencing plan (`rules::fence`), a renewal's progress apart from the
//!   problems (`rules::progress`), how a renewal stops and where it stands
//!   (`rules::failure`: `Fail`, `Cause`; `rules::resume::Progress`), and YAML within bounds (`rules::yaml`:
//!   manifests, the kubelet's configuration, kubeconfigs). It imports no
//!   other layer.
//! - [`node`]: the files under `--root`: the no-follow walk and the durable
//!   writes (`node::fsx`), a renewal as one transaction
//!   (`node::operation::Operation`: `begin` takes the lock, the owner
//!   record and the log and looks for the operation's own receipt; it owns
//!   the lock guard, the phase file's writer, the staged manifest's guard
//!   and the one receipt, and puts a staged manifest back on the failure
//!   path), the lock (`node::lock`), the state directory
//!   (`node::statedir::StateDir`, the only writer of receipts:
//!   `statedir::write_receipt`; a renewal's phase file,
//!   `statedir::PhaseWriter`), manifests and staging
//!   (`staging::StagingGuard`; every way back ends in one move back,
//!   `staging::Dirs::unstage`; where they are,
//!   `manifests::placement`, reads no contents; what `manifests/` holds,
//!   `manifests::inspect`, reads it within the bounds), the
//!   node PKI (and the checks after kubeadm, `node_pki::verify_renewed`),
//!   backups, the operation log, and the one read of the node that
//!   check and status share (`node::snapshot::NodeSnapshot`).
//! - [`tools`]: subprocesses (`tools::proc`), crictl, etcdctl and kubeadm
//!   behind `tools::runtime::Runtime` (real node and test double side by
//!   side), TLS probes (what a component serves: `tools::served`), the
//!   health gate and the waits, signals.
//! - [`judge`]: pure judgements of one observation (the node's reports
//!   from `node`, the live components from `tools`), with no I/O: the
//!   operator's advice (`judge::advice`), the operator view judged and
//!   rendered (`judge::status::Viewed`, and `fence_plan`), the fencing
//!   check's answer (`judge::fence`), the live node as shown
//!   (`judge::live`), a renewal's result, replay and early failure in
//!   words and documents, and its preflight's, CA check's and gate's
//!   judgements (`judge::renew`).
//! - [`modes`]: the entry point (`modes::app::run`, which stamps each
//!   printed document's trailer: `contract::Printed`), and the thin
//!   drivers: the renewal (`modes::runbook::run` over one
//!   `node::operation::Operation`; its context in `modes::runbook::run`:
//!   `Tools`, the gate's memory `Seen`, what a step found `Found`, the
//!   `Run` that folds it in; its steps plain functions over those and the
//!   request, in two tables, the renewal's and the recovery's, the one the
//!   mode asked, in `modes::runbook::steps`), `--check`
//!   (`modes::check`), `--status-only` (`modes::status`: read, judge,
//!   the evidence bundle) and the fencing check under the lock
//!   (`modes::fence`; its file mechanics, the abandon included, in
//!   `node::fence`, its answers in `judge::fence`); the output, written
//!   once and bounded (`modes::output`).
//!
//! House rules as lints (Cargo.toml `[lints]`, clippy.toml): `std::fs` only
//! in the node file layer (`fsx`), `Command::new` only in `proc`, the flock
//! only in `lock`, no `process::exit`, no printing outside `output` and
//! `oplog`, and `unsafe_code` denied. The one documented exception to the
//! last: three system calls that neither std nor nix offer in a safe form,
//! each under `#[allow(unsafe_code)]` with its SAFETY comment:
//! `pre_exec` (prctl PDEATHSIG, `proc`), `atexit` (the stderr queue's last
//! flush, `oplog`) and `pidfd_open` (`pidwatch`).

// The layers, each importing only from the ones above it in this list
// (tests aside).
pub mod contract;
pub mod judge;
pub mod modes;
pub mod node;
pub mod rules;
pub mod tools;

/// Named crash points for the reliability tests (feature `failpoints`).
pub mod failpoints;
