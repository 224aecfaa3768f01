//! The node's moving parts as the runbook sees them: containers (crictl),
//! etcd (etcdctl inside its container), TLS probes, and kubeadm. A trait, so
//! the runbook's rules can run against a test double.

use crate::cli::Global;
use crate::cri::{self, Container, Listing, Sandbox, KUBE_SYSTEM, LABEL_NAMESPACE};
use crate::endpoint::RuntimeEndpoint;
use crate::proc::{self, Output};
use crate::signals::Cancel;
use crate::tlsprobe::{self, ProbeResult, TlsIdentity};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A failure of the container runtime's tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RtError {
    /// crictl could not reach the runtime at all (no such socket, connection
    /// refused): waiting does not fix that, the gate fails at once.
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    Failed(String),
}

impl From<String> for RtError {
    fn from(s: String) -> RtError {
        RtError::Failed(s)
    }
}

/// `Sync`: the health gate queries independent things side by side. Every
/// call takes the time the caller has left (`budget`): no call runs past it.
pub trait Runtime: Sync {
    /// kube-system's containers, exited included, newest first (one
    /// `crictl ps -a` call).
    fn ps(&self, budget: Duration) -> Result<Vec<Container>, RtError>;
    /// kube-system's pod sandboxes (one `crictl pods` call).
    fn pods(&self, budget: Duration) -> Result<Vec<Sandbox>, RtError>;
    /// One look at kube-system: containers, then sandboxes (SPEC 4: at most
    /// two listing calls per gate attempt).
    fn list(&self, budget: Duration) -> Result<Listing, RtError> {
        let t0 = Instant::now();
        let containers = self.ps(budget)?;
        let sandboxes = self.pods(budget.saturating_sub(t0.elapsed()))?;
        Ok(Listing {
            containers,
            sandboxes,
        })
    }
    /// The host PID of a container's process, when the runtime tells it
    /// (`crictl inspect`): the stop wait then watches it with a pidfd.
    fn container_pid(&self, _id: &str, _budget: Duration) -> Result<Option<u32>, RtError> {
        Ok(None)
    }
    /// `etcdctl <args>` inside the etcd container.
    fn etcdctl(
        &self,
        etcd_container: &str,
        args: &[String],
        budget: Duration,
    ) -> Result<Output, String>;
    /// A TLS probe of 127.0.0.1:port.
    fn probe(
        &self,
        port: u16,
        name: &str,
        id: &TlsIdentity,
        now: time::OffsetDateTime,
        path: Option<&str>,
        budget: Duration,
    ) -> Result<ProbeResult, String>;
    /// `kubeadm certs renew all`.
    fn renew_certs(&self) -> Result<Output, String>;
    /// Tools that cannot be found: (phase-worthy name, reason). A missing
    /// tool is not something waiting fixes, so the run fails at once.
    fn missing_tools(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// The runtime endpoint crictl is given, and where it came from.
    fn endpoint(&self) -> Option<&RuntimeEndpoint> {
        None
    }
}

/// Whether crictl's failure says it could not reach the runtime (the CRI
/// client's dial errors, as crictl prints them).
pub fn is_unreachable(stderr: &str) -> bool {
    [
        "validate service connection",
        "Error while dialing",
        "connect: connection refused",
        "connect: no such file or directory",
        "connect: permission denied",
        "code = Unavailable",
        "--runtime-endpoint is not set",
    ]
    .iter()
    .any(|m| stderr.contains(m))
}

/// The real node: crictl and kubeadm as subprocesses.
pub struct NodeRuntime {
    crictl: Option<PathBuf>,
    crictl_error: Option<String>,
    kubeadm: Option<PathBuf>,
    kubeadm_error: Option<String>,
    /// `--rootfs` for kubeadm when the root is not `/`.
    rootfs: Option<String>,
    kubeadm_config: Option<String>,
    endpoint: RuntimeEndpoint,
    timeout: Duration,
    cancel: Cancel,
}

impl NodeRuntime {
    pub fn new(g: &Global, root: &crate::fsx::Root, cancel: Cancel) -> NodeRuntime {
        let endpoint = crate::endpoint::resolve(root, g.runtime_endpoint.as_deref());
        let (crictl, crictl_error) = match proc::resolve_tool("crictl", g.crictl.as_deref()) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e)),
        };
        let (kubeadm, kubeadm_error) = match proc::resolve_tool("kubeadm", g.kubeadm.as_deref()) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e)),
        };
        let rootfs = if crate::cli::is_host_root(&g.root) {
            None
        } else {
            Some(g.root.display().to_string())
        };
        // With --rootfs, kubeadm chroots: the config path is a node path.
        let kubeadm_config = g.kubeadm_config.as_ref().map(|rel| {
            if rootfs.is_some() {
                format!("/{rel}")
            } else {
                g.root.join(rel).display().to_string()
            }
        });
        NodeRuntime {
            crictl,
            crictl_error,
            kubeadm,
            kubeadm_error,
            rootfs,
            kubeadm_config,
            endpoint,
            timeout: g.command_timeout,
            cancel,
        }
    }

    /// Run crictl with the endpoint (before the command, as a global
    /// option), bounded by `budget` and `--command-timeout`.
    fn crictl(&self, args: Vec<String>, budget: Duration) -> Result<Output, String> {
        let Some(p) = &self.crictl else {
            return Err(self.crictl_error.clone().unwrap_or_default());
        };
        let mut v = Vec::with_capacity(args.len() + 2);
        if let Some(e) = &self.endpoint.endpoint {
            v.push("--runtime-endpoint".to_string());
            v.push(e.clone());
        }
        v.extend(args);
        let timeout = self.timeout.min(budget).max(Duration::from_millis(1));
        // Every crictl call is part of a gate attempt or a wait, which log
        // themselves (SPEC 8, v1.1).
        proc::run_in_poll(p, &v, timeout, &self.cancel).map_err(|e| e.to_string())
    }

    /// A crictl listing call (`ps` or `pods`) for kube-system, as JSON.
    fn listing(&self, what: &str, budget: Duration) -> Result<Vec<u8>, RtError> {
        let mut args = vec![what.to_string()];
        if what == "ps" {
            args.push("-a".into());
        }
        args.extend([
            "-o".into(),
            "json".into(),
            "--label".into(),
            format!("{LABEL_NAMESPACE}={KUBE_SYSTEM}"),
        ]);
        let out = self.crictl(args, budget)?;
        if out.success() {
            return Ok(out.stdout);
        }
        let tail = out.stderr_tail();
        let message = format!(
            "crictl {what} failed ({}): {tail}",
            proc::describe_exit(out.code)
        );
        if is_unreachable(&tail) {
            Err(RtError::Unreachable(format!(
                "the container runtime at {} cannot be reached: {message}",
                self.endpoint.describe()
            )))
        } else {
            Err(RtError::Failed(message))
        }
    }
}

impl Runtime for NodeRuntime {
    fn missing_tools(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(e) = &self.crictl_error {
            v.push(("crictl", e.clone()));
        }
        if let Some(e) = &self.kubeadm_error {
            v.push(("kubeadm", e.clone()));
        }
        v
    }

    fn ps(&self, budget: Duration) -> Result<Vec<Container>, RtError> {
        let out = self.listing("ps", budget)?;
        Ok(cri::parse_ps_kube_system(&out)?)
    }

    fn pods(&self, budget: Duration) -> Result<Vec<Sandbox>, RtError> {
        let out = self.listing("pods", budget)?;
        Ok(cri::parse_pods(&out)?)
    }

    fn endpoint(&self) -> Option<&RuntimeEndpoint> {
        Some(&self.endpoint)
    }

    fn container_pid(&self, id: &str, budget: Duration) -> Result<Option<u32>, RtError> {
        let out = self.crictl(
            vec!["inspect".into(), "-o".into(), "json".into(), id.to_string()],
            budget,
        )?;
        if !out.success() {
            return Err(RtError::Failed(format!(
                "crictl inspect failed ({}): {}",
                proc::describe_exit(out.code),
                out.stderr_tail()
            )));
        }
        Ok(cri::parse_inspect_pid(&out.stdout)?)
    }

    fn etcdctl(
        &self,
        etcd_container: &str,
        args: &[String],
        budget: Duration,
    ) -> Result<Output, String> {
        let mut v = vec![
            "exec".to_string(),
            etcd_container.to_string(),
            "etcdctl".to_string(),
        ];
        v.extend_from_slice(args);
        self.crictl(v, budget)
    }

    fn probe(
        &self,
        port: u16,
        name: &str,
        id: &TlsIdentity,
        now: time::OffsetDateTime,
        path: Option<&str>,
        budget: Duration,
    ) -> Result<ProbeResult, String> {
        tlsprobe::probe(port, name, id, now, path, budget)
    }

    fn renew_certs(&self) -> Result<Output, String> {
        let Some(p) = &self.kubeadm else {
            return Err(self.kubeadm_error.clone().unwrap_or_default());
        };
        let mut args: Vec<String> = vec!["certs".into(), "renew".into(), "all".into()];
        if let Some(c) = &self.kubeadm_config {
            args.push("--config".into());
            args.push(c.clone());
        }
        if let Some(r) = &self.rootfs {
            args.push("--rootfs".into());
            args.push(r.clone());
        }
        proc::run(p, &args, self.timeout, &self.cancel).map_err(|e| e.to_string())
    }
}
