//! nvke-cert-runbook: renews kubeadm leaf certificates on one control-plane
//! node and restarts its static pods one at a time. See SPEC and README.
//!
//! Pure domain modules (parse, decide, render) are apart from node I/O.

// Domain (pure).
pub mod agent;
pub mod clock;
pub mod component;
pub mod opid;
pub mod outcome;
pub mod phase;
pub mod pki;
pub mod receipt;
