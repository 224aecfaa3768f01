//! nvke-cert-runbook: renews kubeadm leaf certificates on one control-plane
//! node and restarts its static pods one at a time. See SPEC and README.
//!
//! Pure domain modules (parse, decide, render) are apart from node I/O.
//!
//! House rules as lints (Cargo.toml `[lints]`, clippy.toml): `std::fs` only
//! in the node file layer (`fsx`), `Command::new` only in `proc`, the flock
//! only in `lock`, no `process::exit`, no printing outside `output` and
//! `oplog`, and `unsafe_code` denied. The one documented exception to the
//! last: three system calls that neither std nor nix offer in a safe form,
//! each under `#[allow(unsafe_code)]` with its SAFETY comment:
//! `pre_exec` (prctl PDEATHSIG, `proc`), `atexit` (the stderr queue's last
//! flush, `oplog`) and `pidfd_open` (`pidwatch`).

// The contract: the types of every JSON document and file.
pub mod contract;

// Domain (pure): parse from bytes, decide, render.
pub mod agent;
pub mod clock;
pub mod component;
pub mod flags;
pub mod opid;
pub mod outcome;
pub mod phase;
pub mod pki;
pub mod receipt;
pub mod resume;

// Command line and output.
pub mod cli;
pub mod output;
pub mod version;

// Node I/O: paths under --root, safe reads and durable writes, the lock.
pub mod backup;
pub mod fsx;
pub mod inspect;
pub mod lock;
pub mod manifests;
pub mod node_pki;
pub mod oplog;
pub mod paths;
pub mod snapshot;
pub mod staging;
pub mod statedir;

// The runtime side: subprocesses, crictl/etcdctl, TLS probes, health gate.
pub mod cri;
pub mod endpoint;
pub mod health;
pub mod pidwatch;
pub mod proc;
pub mod runtime;
pub mod signals;
pub mod tlsprobe;

// Modes.
pub mod app;
pub mod check;
pub mod failpoints;
pub mod runbook;
pub mod status;
