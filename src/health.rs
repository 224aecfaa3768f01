//! The local health gate (SPEC step 7) and the waits of the restart loop.
//! Every wait polls at a short interval to a deadline and checks the cancel
//! flag; structural refusals (two voters, a learner, not a voter) end at once.

use crate::component::Component;
use crate::cri::{self, EtcdVerdict};
use crate::fsx::{Root, Trust, NODE_FILE_MAX};
use crate::manifests;
use crate::outcome::Phase;
use crate::paths::MANIFESTS_DIR;
use crate::pki::{self, KubeconfigCert};
use crate::runtime::Runtime;
use crate::signals::Cancel;
use crate::tlsprobe::TlsIdentity;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

const PANICKED: &str = "etcdctl probe panicked";

/// Interval between container polls (stop/start waits).
pub const CONTAINER_POLL: Duration = Duration::from_millis(10);
/// Interval between full health-gate attempts.
pub const GATE_POLL: Duration = Duration::from_millis(20);

/// etcdctl flags of the guide's validation section: paths as the etcd
/// container sees them, whatever --root is.
pub fn etcdctl_flags(port: u16) -> Vec<String> {
    vec![
        format!("--endpoints=https://127.0.0.1:{port}"),
        "--cacert=/etc/kubernetes/pki/etcd/ca.crt".into(),
        "--cert=/etc/kubernetes/pki/etcd/server.crt".into(),
        "--key=/etc/kubernetes/pki/etcd/server.key".into(),
        "--dial-timeout=10s".into(),
        "--command-timeout=30s".into(),
    ]
}

#[derive(Debug, Clone)]
pub enum GateError {
    /// Will not pass by waiting: fail at once with this phase.
    Structural {
        phase: Phase,
        message: String,
    },
    TimedOut {
        message: String,
    },
    Cancelled,
}

impl GateError {
    pub fn message(&self) -> String {
        match self {
            GateError::Structural { message, .. } | GateError::TimedOut { message } => {
                message.clone()
            }
            GateError::Cancelled => "cancelled".into(),
        }
    }
}

/// What a passing gate saw.
#[derive(Debug, Clone)]
pub struct GateOk {
    pub etcd_voters: usize,
    pub etcd_healthy_voters: usize,
    pub containers: Vec<(Component, String)>,
}

enum Attempt {
    Pass(GateOk),
    NotYet(String),
    Structural(Phase, String),
}

pub struct Health<'a> {
    pub rt: &'a dyn Runtime,
    pub root: &'a Root,
    pub cancel: &'a Cancel,
    pub now: OffsetDateTime,
}

fn read(root: &Root, rel: &str) -> Result<Vec<u8>, String> {
    root.read_file(rel, NODE_FILE_MAX, Trust::TypeOnly)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} does not exist", crate::paths::node(rel)))
}

/// The identity to probe kube-apiserver with: pki/ca.crt and admin.conf's
/// client certificate and key (re-read each time: kubeadm renews them).
pub fn apiserver_identity(root: &Root) -> Result<TlsIdentity, String> {
    let ca_pem = read(root, "etc/kubernetes/pki/ca.crt")?;
    let admin = read(root, "etc/kubernetes/admin.conf")?;
    let client_cert_pem =
        match pki::kubeconfig_client_cert(&admin).map_err(|e| format!("admin.conf: {e}"))? {
            KubeconfigCert::Embedded(p) => p,
            KubeconfigCert::File(p) => read(root, p.trim_start_matches('/'))?,
        };
    let client_key_pem = pki::kubeconfig_client_key(&admin)
        .map_err(|e| format!("admin.conf: {e}"))?
        .ok_or("admin.conf has no embedded client key")?;
    Ok(TlsIdentity {
        ca_pem,
        client_cert_pem,
        client_key_pem,
    })
}

/// The identity to probe etcd's client port with (healthcheck client).
pub fn etcd_identity(root: &Root) -> Result<TlsIdentity, String> {
    Ok(TlsIdentity {
        ca_pem: read(root, "etc/kubernetes/pki/etcd/ca.crt")?,
        client_cert_pem: read(root, "etc/kubernetes/pki/etcd/healthcheck-client.crt")?,
        client_key_pem: read(root, "etc/kubernetes/pki/etcd/healthcheck-client.key")?,
    })
}

/// kube-apiserver's secure port, from its active manifest.
pub fn apiserver_port(root: &Root) -> Result<u16, String> {
    let m = read(root, &format!("{MANIFESTS_DIR}/kube-apiserver.yaml"))?;
    manifests::apiserver_secure_port(&m)
}

/// etcd's local client port, from its active manifest.
pub fn etcd_port(root: &Root) -> Result<u16, String> {
    let m = read(root, &format!("{MANIFESTS_DIR}/etcd.yaml"))?;
    manifests::etcd_client_port(&m)
}

impl Health<'_> {
    fn etcd(&self, etcd_id: &str) -> Attempt {
        let port = match etcd_port(self.root) {
            Ok(p) => p,
            Err(e) => return Attempt::NotYet(e),
        };
        let run = |cmd: &[&str]| -> Result<Vec<u8>, String> {
            let mut args = etcdctl_flags(port);
            args.extend(cmd.iter().map(|s| s.to_string()));
            let out = self.rt.etcdctl(etcd_id, &args)?;
            if out.stdout.is_empty() {
                return Err(format!(
                    "etcdctl {} failed ({}): {}",
                    cmd.join(" "),
                    crate::proc::describe_exit(out.code),
                    out.stderr_tail()
                ));
            }
            Ok(out.stdout)
        };
        // The three etcdctl calls are independent: run them side by side.
        let (members, local, cluster) = std::thread::scope(|s| {
            let m = s.spawn(|| {
                run(&["member", "list", "-w", "json"]).and_then(|b| cri::parse_member_list(&b))
            });
            let l = s.spawn(|| {
                run(&["endpoint", "health", "-w", "json"])
                    .and_then(|b| cri::parse_endpoint_health(&b))
            });
            let c = s.spawn(|| {
                run(&["endpoint", "health", "--cluster", "-w", "json"])
                    .and_then(|b| cri::parse_endpoint_health(&b))
            });
            (
                m.join().unwrap_or_else(|_| Err(PANICKED.to_string())),
                l.join().unwrap_or_else(|_| Err(PANICKED.to_string())),
                c.join().unwrap_or_else(|_| Err(PANICKED.to_string())),
            )
        });
        let members = match members {
            Ok(m) => m,
            Err(e) => return Attempt::NotYet(e),
        };
        let local = match local {
            Ok(v) => v,
            Err(e) => return Attempt::NotYet(e),
        };
        let cluster = match cluster {
            Ok(v) => v,
            Err(e) => return Attempt::NotYet(e),
        };
        match cri::judge_etcd(&local, &cluster, &members) {
            EtcdVerdict::Ok {
                voters,
                healthy_voters,
            } => Attempt::Pass(GateOk {
                etcd_voters: voters,
                etcd_healthy_voters: healthy_voters,
                containers: Vec::new(),
            }),
            EtcdVerdict::NotYet(m) => Attempt::NotYet(m),
            EtcdVerdict::Structural {
                two_voters: true,
                reason,
            } => Attempt::Structural(Phase::TwoControlPlaneVoters, reason),
            EtcdVerdict::Structural { reason, .. } => Attempt::Structural(Phase::Health, reason),
        }
    }

    fn attempt(&self) -> Attempt {
        // The four container queries and the kube-apiserver probe are
        // independent: run them side by side, then etcd (it needs the
        // etcd container's ID).
        let (containers, readyz) = std::thread::scope(|s| {
            let handles: Vec<_> = Component::ALL
                .iter()
                .map(|&c| s.spawn(move || (c, self.rt.containers(c))))
                .collect();
            let probe = s.spawn(|| self.readyz());
            let containers: Vec<_> = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or((Component::Etcd, Err("container query panicked".into())))
                })
                .collect();
            (
                containers,
                probe
                    .join()
                    .unwrap_or_else(|_| Err("readyz probe panicked".into())),
            )
        });
        let mut running = Vec::new();
        for (c, result) in containers {
            match result {
                Ok(list) => match cri::running(&list) {
                    Some(r) => running.push((c, r.id.clone())),
                    None => return Attempt::NotYet(format!("{c} has no running container")),
                },
                Err(e) => return Attempt::NotYet(e),
            }
        }
        let mut ok = match self.etcd(&running[0].1) {
            Attempt::Pass(ok) => ok,
            other => return other,
        };
        ok.containers = running;
        match readyz {
            Ok(()) => Attempt::Pass(ok),
            Err(e) => Attempt::NotYet(e),
        }
    }

    /// kube-apiserver answers `/readyz` with 200.
    fn readyz(&self) -> Result<(), String> {
        let port = apiserver_port(self.root)?;
        let id = apiserver_identity(self.root)?;
        match self
            .rt
            .probe(port, "kubernetes", &id, self.now, Some("/readyz"))
        {
            Ok(r) if r.status == Some(200) => Ok(()),
            Ok(r) => Err(format!("kube-apiserver /readyz answered {:?}", r.status)),
            Err(e) => Err(format!("kube-apiserver /readyz: {e}")),
        }
    }

    /// Poll the whole gate until it passes, `timeout` runs out, a structural
    /// refusal, or cancellation.
    pub fn wait_gate(&self, timeout: Duration) -> Result<GateOk, GateError> {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        loop {
            if self.cancel.is_cancelled() {
                return Err(GateError::Cancelled);
            }
            crate::crash_point!("gate-in-wait");
            match self.attempt() {
                Attempt::Pass(ok) => return Ok(ok),
                Attempt::Structural(phase, message) => {
                    return Err(GateError::Structural { phase, message })
                }
                Attempt::NotYet(m) => {
                    if m != last {
                        tracing::info!("health gate not yet passing: {m}");
                        last = m;
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(GateError::TimedOut {
                    message: format!(
                        "local health gate did not pass within {}s: {last}",
                        timeout.as_secs()
                    ),
                });
            }
            sleep_until(deadline, GATE_POLL, self.cancel);
        }
    }

    /// Wait until no container of `c` with ID `old` is running (gone counts
    /// as stopped).
    pub fn wait_stopped(
        &self,
        c: Component,
        old: &str,
        timeout: Duration,
    ) -> Result<(), GateError> {
        let deadline = Instant::now() + timeout;
        loop {
            crate::crash_point!("restart-in-wait-stop");
            if self.cancel.is_cancelled() {
                return Err(GateError::Cancelled);
            }
            if let Ok(list) = self.rt.containers(c) {
                if !list.iter().any(|x| x.id == old && x.is_running()) {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(GateError::TimedOut {
                    message: format!(
                        "{c} container {} did not stop within {}s",
                        short(old),
                        timeout.as_secs()
                    ),
                });
            }
            sleep_until(deadline, CONTAINER_POLL, self.cancel);
        }
    }

    /// Wait until a container of `c` other than `old` runs; returns its ID.
    pub fn wait_new_running(
        &self,
        c: Component,
        old: &str,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<String, GateError> {
        loop {
            crate::crash_point!("restart-in-wait-start");
            if self.cancel.is_cancelled() {
                return Err(GateError::Cancelled);
            }
            if let Ok(list) = self.rt.containers(c) {
                if let Some(n) = list.iter().find(|x| x.is_running() && x.id != old) {
                    return Ok(n.id.clone());
                }
            }
            if Instant::now() >= deadline {
                return Err(GateError::TimedOut {
                    message: format!("no new {c} container ran within {}s", timeout.as_secs()),
                });
            }
            sleep_until(deadline, CONTAINER_POLL, self.cancel);
        }
    }
}

/// Sleep `step` (or to the deadline), waking early on cancellation.
pub fn sleep_until(deadline: Instant, step: Duration, cancel: &Cancel) {
    let end = (Instant::now() + step).min(deadline);
    while Instant::now() < end {
        if cancel.is_cancelled() {
            return;
        }
        std::thread::sleep(
            Duration::from_millis(5).min(end.saturating_duration_since(Instant::now())),
        );
    }
}

/// A container ID shortened for messages.
pub fn short(id: &str) -> &str {
    &id[..id.len().min(13)]
}
