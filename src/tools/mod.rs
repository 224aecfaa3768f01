//! Subprocesses and the network: crictl, etcdctl and kubeadm behind the Runtime trait, TLS probes, signals.

/// The local kube-apiserver's `/readyz` probed while a component restarts.
pub(crate) mod apiwatch;
/// The container runtime endpoint crictl is given, as kubelet is.
pub(crate) mod endpoint;
/// etcd asked directly over TLS (SPEC 4 step 7, v1.2).
pub(crate) mod etcd;
/// The health gate and the stop and start waits (SPEC 4).
pub(crate) mod health;
/// The live observation (SPEC 10, v1.2).
pub(crate) mod live;
/// Waiting on a process exit with a pidfd.
pub(crate) mod pidwatch;
/// Subprocesses: absolute path, cleared env, timeout, capped output.
pub(crate) mod proc;
/// The Runtime trait, the real node, and the test double.
pub(crate) mod runtime;
pub(crate) mod served;
/// SIGTERM and SIGINT cancel, SIGHUP ignored.
pub(crate) mod signals;
/// Ports and TLS identities of the local control plane, from the node.
pub(crate) mod targets;
/// TLS probes of the local kube-apiserver and etcd.
pub(crate) mod tlsprobe;

/// What the tests that compare the simulated node with the real tools run
/// and judge exactly as the runbook does (tests/sim_vs_real.rs).
pub use etcd::etcdctl_flags;
pub use runtime::is_unreachable;
/// The TLS question the live observation asks (tests/sim_vs_real.rs asks
/// real etcd and the simulated one the same way).
pub use tlsprobe::{ask, Answer, Question, TlsIdentity, Trust};
