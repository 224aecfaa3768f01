//! The node's moving parts as the runbook sees them: containers (crictl),
//! etcd (etcdctl inside its container), TLS probes, and kubeadm. A trait, so
//! the runbook's rules can run against a test double.

use crate::cli::Global;
use crate::component::Component;
use crate::cri::{self, Container, KUBE_SYSTEM, LABEL_CONTAINER, LABEL_NAMESPACE};
use crate::proc::{self, Output};
use crate::signals::Cancel;
use crate::tlsprobe::{self, ProbeResult, TlsIdentity};
use std::path::PathBuf;
use std::time::Duration;

/// `Sync`: the health gate queries independent things side by side.
pub trait Runtime: Sync {
    /// Containers of one component (exact labels), newest first, exited included.
    fn containers(&self, c: Component) -> Result<Vec<Container>, String>;
    /// `etcdctl <args>` inside the etcd container.
    fn etcdctl(&self, etcd_container: &str, args: &[String]) -> Result<Output, String>;
    /// A TLS probe of 127.0.0.1:port.
    fn probe(
        &self,
        port: u16,
        name: &str,
        id: &TlsIdentity,
        now: time::OffsetDateTime,
        path: Option<&str>,
    ) -> Result<ProbeResult, String>;
    /// `kubeadm certs renew all`.
    fn renew_certs(&self) -> Result<Output, String>;
    /// Tools that cannot be found: (phase-worthy name, reason). A missing
    /// tool is not something waiting fixes, so the run fails at once.
    fn missing_tools(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
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
    timeout: Duration,
    cancel: Cancel,
}

impl NodeRuntime {
    pub fn new(g: &Global, cancel: Cancel) -> NodeRuntime {
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
            timeout: g.command_timeout,
            cancel,
        }
    }

    fn crictl(&self, args: Vec<String>) -> Result<Output, String> {
        let Some(p) = &self.crictl else {
            return Err(self.crictl_error.clone().unwrap_or_default());
        };
        proc::run(p, &args, self.timeout, &self.cancel).map_err(|e| e.to_string())
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

    fn containers(&self, c: Component) -> Result<Vec<Container>, String> {
        let out = self.crictl(vec![
            "ps".into(),
            "-a".into(),
            "-o".into(),
            "json".into(),
            "--label".into(),
            format!("{LABEL_NAMESPACE}={KUBE_SYSTEM}"),
            "--label".into(),
            format!("{LABEL_CONTAINER}={}", c.name()),
        ])?;
        if !out.success() {
            return Err(format!(
                "crictl ps failed ({}): {}",
                proc::describe_exit(out.code),
                out.stderr_tail()
            ));
        }
        cri::parse_ps(&out.stdout, c.name())
    }

    fn etcdctl(&self, etcd_container: &str, args: &[String]) -> Result<Output, String> {
        let mut v = vec![
            "exec".to_string(),
            etcd_container.to_string(),
            "etcdctl".to_string(),
        ];
        v.extend_from_slice(args);
        self.crictl(v)
    }

    fn probe(
        &self,
        port: u16,
        name: &str,
        id: &TlsIdentity,
        now: time::OffsetDateTime,
        path: Option<&str>,
    ) -> Result<ProbeResult, String> {
        tlsprobe::probe(port, name, id, now, path)
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
