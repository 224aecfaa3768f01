//! The four static pod manifests of a kubeadm v1.31 control-plane node,
//! written from a small description of the node ([`ControlPlane`]), the
//! way kubeadm writes them (test support only).
//!
//! What it follows in kubeadm (read in kubernetes/kubernetes):
//!
//! - `cmd/kubeadm/app/phases/controlplane/manifests.go` (`GetStaticPodSpecs`,
//!   `getAPIServerCommand`, `getControllerManagerCommand`,
//!   `getSchedulerCommand`): each command is kubeadm's default arguments
//!   with the cluster's `extraArgs` over them, sorted by name
//!   (`ArgumentsToCommand`); kube-apiserver's `--advertise-address` and
//!   `--secure-port` from its API endpoint, `--etcd-servers` the loopback
//!   of the advertise address's family on etcd's client port (or the
//!   external endpoints, or etcd's `advertise-client-urls` extra argument);
//!   its probes `/livez` (liveness, startup) and `/readyz` (readiness) on
//!   its advertise address and secure port, HTTPS; the controller-manager's
//!   and the scheduler's `/healthz` (liveness, startup; no readiness probe)
//!   on their `--bind-address`, HTTPS, on kubeadm's constant ports (10257,
//!   10259). The apiserver's pod carries the
//!   `kube-apiserver.advertise-address.endpoint` annotation (`host:port`,
//!   IPv6 in brackets).
//! - `cmd/kubeadm/app/phases/etcd/local.go` (`GetEtcdPodSpec`,
//!   `getEtcdCommand`): the client URLs `https://<loopback>:2379` and
//!   `https://<advertise>:2379`, the peer URL `https://<advertise>:2380`
//!   (listened on, advertised and the initial cluster), the metrics URL
//!   `http://<loopback>:2381`, the loopback of the advertise address's
//!   family (`::1` for IPv6); probes on that loopback's metrics port over
//!   HTTP: `/livez` (liveness), `/readyz` (readiness, startup).
//! - `cmd/kubeadm/app/util/staticpod/utils.go` (`LivenessProbe`,
//!   `ReadinessProbe`, `StartupProbe`, `GetAPIServerProbeAddress`,
//!   `GetControllerManagerProbeAddress`, `GetSchedulerProbeAddress`,
//!   `getProbeAddress`, `GetEtcdProbeEndpoint`): liveness initial delay
//!   10 s, timeout 15 s, failure threshold 8, period 10 s; readiness
//!   timeout 15 s, threshold 3, period 1 s; startup initial delay 10 s,
//!   timeout 15 s, period 10 s, threshold = the control plane's health
//!   check timeout (240 s) / 10 s = 24; an unspecified bind address
//!   (`0.0.0.0`, `::`) gives a probe without a host.
//!
//! Where the description departs from kubeadm's constants (the simulated
//! node's free ports), the port stands where kubeadm writes its constant:
//! etcd's URLs and annotation, and the controller-manager's and
//! scheduler's probes. kubeadm itself writes those two probes on 10257 and
//! 10259 whatever `--secure-port` its `extraArgs` give; a node that moves
//! them has its probes patched to match (`kubeadm --patches`), which is
//! what is written here. The file layout (key order, quoting, two-space
//! lists) is the fixture's (`fixtures/nodes/*/etc/kubernetes/manifests`,
//! written by kubeadm v1.31), proven equal byte for byte by
//! `tests/shapes.rs` `the_generator_writes_the_fixture_manifests`.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::Path;

/// The node, as kubeadm's configuration describes it.
#[derive(Debug, Clone)]
pub struct ControlPlane {
    /// The node name (`--name`, `--initial-cluster`).
    pub node_name: String,
    /// The API endpoint's advertise address: the node's family, etcd's
    /// client and peer URLs, the apiserver's probes.
    pub advertise: IpAddr,
    /// kube-apiserver's `--secure-port` (kubeadm's `bindPort`).
    pub api_port: u16,
    /// etcd's client and peer ports (kubeadm: 2379, 2380).
    pub etcd_client_port: u16,
    pub etcd_peer_port: u16,
    /// etcd's metrics port (kubeadm: 2381), on the loopback of the family:
    /// `--listen-metrics-urls` and etcd's probes (kubeadm's
    /// `GetEtcdProbeEndpoint` follows a `listen-metrics-urls` extra
    /// argument).
    pub etcd_metrics_port: u16,
    /// kube-controller-manager's and kube-scheduler's `--secure-port`
    /// (kubeadm's default 10257, 10259: no flag written).
    pub kcm_port: u16,
    pub sched_port: u16,
    /// kube-apiserver's `--bind-address` (an extra argument; none by
    /// default).
    pub api_bind: Option<IpAddr>,
    /// kube-controller-manager's and kube-scheduler's `--bind-address`
    /// (kubeadm's default `127.0.0.1`).
    pub kcm_bind: IpAddr,
    pub sched_bind: IpAddr,
    /// etcd's `--listen-client-urls` hosts (None: kubeadm's, the loopback
    /// of the family and the advertise address; Some: the extra argument).
    pub etcd_listen_client: Option<Vec<IpAddr>>,
    /// `--etcd-servers` of a stacked etcd (None: kubeadm's, the loopback of
    /// the family on the client port).
    pub etcd_servers: Option<String>,
    /// External etcd: its endpoints (no etcd.yaml; the apiserver's
    /// `--etcd-servers`).
    pub external_etcd: Option<Vec<String>>,
    /// kube-apiserver's `--tls-cert-file` and `--tls-private-key-file`
    /// (extra arguments; None: kubeadm's, under the certificates dir).
    pub api_serving: Option<(String, String)>,
    /// kubeadm's `certificatesDir` (`/etc/kubernetes/pki`; kubespray's
    /// `/etc/kubernetes/ssl`).
    pub certificates_dir: String,
    /// `serviceSubnet` and `podSubnet` (comma-separated for dual-stack).
    pub service_subnet: String,
    pub pod_subnet: String,
    /// The image tags: kube-* and etcd.
    pub kubernetes_version: String,
    pub etcd_version: String,
    /// Components whose startup probe is cut to one second
    /// (`initialDelaySeconds: 0`, `failureThreshold: 1`, `periodSeconds:
    /// 1`), as a patch would write it: the tests' short start allowance.
    pub short_start: Vec<String>,
}

impl ControlPlane {
    /// The fixture's node: cp-1 on 10.0.0.11 with kubeadm's ports.
    pub fn fixture() -> ControlPlane {
        ControlPlane {
            node_name: "cp-1".into(),
            advertise: "10.0.0.11".parse().unwrap(),
            api_port: 6443,
            etcd_client_port: 2379,
            etcd_peer_port: 2380,
            etcd_metrics_port: 2381,
            kcm_port: 10257,
            sched_port: 10259,
            api_bind: None,
            kcm_bind: "127.0.0.1".parse().unwrap(),
            sched_bind: "127.0.0.1".parse().unwrap(),
            etcd_listen_client: None,
            etcd_servers: None,
            external_etcd: None,
            api_serving: None,
            certificates_dir: "/etc/kubernetes/pki".into(),
            service_subnet: "10.96.0.0/12".into(),
            pod_subnet: "10.244.0.0/16".into(),
            kubernetes_version: "v1.31.4".into(),
            etcd_version: "3.5.15-0".into(),
            short_start: Vec::new(),
        }
    }

    /// The loopback of the advertise address's family (kubeadm's
    /// `etcdLocalhostAddress`).
    pub fn loopback(&self) -> IpAddr {
        loopback_of(self.advertise)
    }

    /// etcd's client URL on `host`.
    pub fn etcd_client_url(&self, host: IpAddr) -> String {
        format!("https://{}", host_port(host, self.etcd_client_port))
    }

    /// The manifests: (file name, text); no `etcd.yaml` for external etcd.
    pub fn manifests(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.external_etcd.is_none() {
            v.push(("etcd.yaml", self.etcd()));
        }
        v.push(("kube-apiserver.yaml", self.apiserver()));
        v.push(("kube-controller-manager.yaml", self.controller_manager()));
        v.push(("kube-scheduler.yaml", self.scheduler()));
        v
    }

    /// Writes [`manifests`](Self::manifests) into `dir` over the fixture's
    /// copies (their mode kept), removing an `etcd.yaml` that an external
    /// etcd node has none of. Other files (kube-vip.yaml) are left as they
    /// are.
    pub fn write(&self, dir: &Path) {
        if self.external_etcd.is_some() {
            let _ = std::fs::remove_file(dir.join("etcd.yaml"));
        }
        for (name, text) in self.manifests() {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    fn pki(&self, rel: &str) -> String {
        format!("{}/{rel}", self.certificates_dir)
    }

    fn image(&self, name: &str) -> String {
        format!("registry.k8s.io/{name}:{}", self.kubernetes_version)
    }

    fn probes(&self, component: &str, host: Option<IpAddr>, port: u16, paths: Paths) -> String {
        let mut s = String::new();
        let get = |s: &mut String, path: &str| {
            s.push_str("      httpGet:\n");
            if let Some(h) = host {
                let _ = writeln!(s, "        host: {}", scalar(&h.to_string()));
            }
            let _ = writeln!(s, "        path: {path}");
            let _ = writeln!(s, "        port: {port}");
            let _ = writeln!(s, "        scheme: {}", paths.scheme);
        };
        s.push_str("    livenessProbe:\n      failureThreshold: 8\n");
        get(&mut s, paths.liveness);
        s.push_str(
            "      initialDelaySeconds: 10\n      periodSeconds: 10\n      timeoutSeconds: 15\n",
        );
        let _ = writeln!(s, "    name: {component}");
        if let Some(r) = paths.readiness {
            s.push_str("    readinessProbe:\n      failureThreshold: 3\n");
            get(&mut s, r);
            s.push_str("      periodSeconds: 1\n      timeoutSeconds: 15\n");
        }
        s.push_str(paths.resources);
        let short = self.short_start.iter().any(|c| c == component);
        let (threshold, delay, period) = if short { (1, 0, 1) } else { (24, 10, 10) };
        let _ = writeln!(s, "    startupProbe:\n      failureThreshold: {threshold}");
        get(&mut s, paths.startup);
        let _ = writeln!(
            s,
            "      initialDelaySeconds: {delay}\n      periodSeconds: {period}\n      timeoutSeconds: 15"
        );
        s
    }

    pub fn etcd(&self) -> String {
        let lo = self.loopback();
        let client = self.etcd_client_url(self.advertise);
        let peer = format!("https://{}", host_port(self.advertise, self.etcd_peer_port));
        let listen: Vec<String> = match &self.etcd_listen_client {
            Some(hosts) => hosts.iter().map(|h| self.etcd_client_url(*h)).collect(),
            None => vec![self.etcd_client_url(lo), client.clone()],
        };
        let certs = self.pki("etcd");
        let args = [
            ("advertise-client-urls", client.clone()),
            ("cert-file", self.pki("etcd/server.crt")),
            ("client-cert-auth", "true".into()),
            ("data-dir", "/var/lib/etcd".into()),
            ("experimental-initial-corrupt-check", "true".into()),
            ("experimental-watch-progress-notify-interval", "5s".into()),
            ("initial-advertise-peer-urls", peer.clone()),
            ("initial-cluster", format!("{}={peer}", self.node_name)),
            ("key-file", self.pki("etcd/server.key")),
            ("listen-client-urls", listen.join(",")),
            (
                "listen-metrics-urls",
                format!("http://{}", host_port(lo, self.etcd_metrics_port)),
            ),
            ("listen-peer-urls", peer.clone()),
            ("name", self.node_name.clone()),
            ("peer-cert-file", self.pki("etcd/peer.crt")),
            ("peer-client-cert-auth", "true".into()),
            ("peer-key-file", self.pki("etcd/peer.key")),
            ("peer-trusted-ca-file", self.pki("etcd/ca.crt")),
            ("snapshot-count", "10000".into()),
            ("trusted-ca-file", self.pki("etcd/ca.crt")),
        ];
        let mut s = header(
            &[(
                "kubeadm.kubernetes.io/etcd.advertise-client-urls",
                client.clone(),
            )],
            "etcd",
        );
        s.push_str(&command("etcd", &args));
        let _ = writeln!(
            s,
            "    image: registry.k8s.io/etcd:{}\n    imagePullPolicy: IfNotPresent",
            self.etcd_version
        );
        s.push_str(&self.probes(
            "etcd",
            Some(lo),
            self.etcd_metrics_port,
            Paths {
                liveness: "/livez",
                readiness: Some("/readyz"),
                startup: "/readyz",
                scheme: "HTTP",
                resources:
                    "    resources:\n      requests:\n        cpu: 100m\n        memory: 100Mi\n",
            },
        ));
        let _ = write!(
            s,
            "    volumeMounts:\n    - mountPath: /var/lib/etcd\n      name: etcd-data\n    - mountPath: {certs}\n      name: etcd-certs\n"
        );
        s.push_str(&footer(&[
            ("etcd-certs", certs.as_str(), "DirectoryOrCreate"),
            ("etcd-data", "/var/lib/etcd", "DirectoryOrCreate"),
        ]));
        s
    }

    pub fn apiserver(&self) -> String {
        let lo = self.loopback();
        let etcd_servers = match (&self.external_etcd, &self.etcd_servers) {
            (Some(eps), _) => eps.join(","),
            (None, Some(s)) => s.clone(),
            (None, None) => self.etcd_client_url(lo),
        };
        let (crt, key) = self
            .api_serving
            .clone()
            .unwrap_or_else(|| (self.pki("apiserver.crt"), self.pki("apiserver.key")));
        let mut args = vec![
            ("advertise-address", self.advertise.to_string()),
            ("allow-privileged", "true".into()),
            ("authorization-mode", "Node,RBAC".into()),
            ("client-ca-file", self.pki("ca.crt")),
            ("enable-admission-plugins", "NodeRestriction".into()),
            ("enable-bootstrap-token-auth", "true".into()),
            ("etcd-cafile", self.pki("etcd/ca.crt")),
            ("etcd-certfile", self.pki("apiserver-etcd-client.crt")),
            ("etcd-keyfile", self.pki("apiserver-etcd-client.key")),
            ("etcd-servers", etcd_servers),
            (
                "kubelet-client-certificate",
                self.pki("apiserver-kubelet-client.crt"),
            ),
            (
                "kubelet-client-key",
                self.pki("apiserver-kubelet-client.key"),
            ),
            (
                "kubelet-preferred-address-types",
                "InternalIP,ExternalIP,Hostname".into(),
            ),
            ("proxy-client-cert-file", self.pki("front-proxy-client.crt")),
            ("proxy-client-key-file", self.pki("front-proxy-client.key")),
            ("requestheader-allowed-names", "front-proxy-client".into()),
            (
                "requestheader-client-ca-file",
                self.pki("front-proxy-ca.crt"),
            ),
            (
                "requestheader-extra-headers-prefix",
                "X-Remote-Extra-".into(),
            ),
            ("requestheader-group-headers", "X-Remote-Group".into()),
            ("requestheader-username-headers", "X-Remote-User".into()),
            ("secure-port", self.api_port.to_string()),
            (
                "service-account-issuer",
                "https://kubernetes.default.svc.cluster.local".into(),
            ),
            ("service-account-key-file", self.pki("sa.pub")),
            ("service-account-signing-key-file", self.pki("sa.key")),
            ("service-cluster-ip-range", self.service_subnet.clone()),
            ("tls-cert-file", crt),
            ("tls-private-key-file", key),
        ];
        if let Some(b) = self.api_bind {
            args.push(("bind-address", b.to_string()));
        }
        let mut s = header(
            &[(
                "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
                host_port(self.advertise, self.api_port),
            )],
            "kube-apiserver",
        );
        s.push_str(&command("kube-apiserver", &args));
        let _ = writeln!(
            s,
            "    image: {}\n    imagePullPolicy: IfNotPresent",
            self.image("kube-apiserver")
        );
        s.push_str(&self.probes(
            "kube-apiserver",
            probe_address(self.advertise),
            self.api_port,
            Paths {
                liveness: "/livez",
                readiness: Some("/readyz"),
                startup: "/livez",
                scheme: "HTTPS",
                resources: "    resources:\n      requests:\n        cpu: 250m\n",
            },
        ));
        let k8s_certs = self.certificates_dir.as_str();
        s.push_str(&mounts(&[
            ("/etc/ssl/certs", "ca-certs", true),
            ("/etc/ca-certificates", "etc-ca-certificates", true),
            (k8s_certs, "k8s-certs", true),
            (
                "/usr/local/share/ca-certificates",
                "usr-local-share-ca-certificates",
                true,
            ),
            (
                "/usr/share/ca-certificates",
                "usr-share-ca-certificates",
                true,
            ),
        ]));
        s.push_str(&footer(&[
            ("ca-certs", "/etc/ssl/certs", "DirectoryOrCreate"),
            (
                "etc-ca-certificates",
                "/etc/ca-certificates",
                "DirectoryOrCreate",
            ),
            ("k8s-certs", k8s_certs, "DirectoryOrCreate"),
            (
                "usr-local-share-ca-certificates",
                "/usr/local/share/ca-certificates",
                "DirectoryOrCreate",
            ),
            (
                "usr-share-ca-certificates",
                "/usr/share/ca-certificates",
                "DirectoryOrCreate",
            ),
        ]));
        s
    }

    pub fn controller_manager(&self) -> String {
        let conf = "/etc/kubernetes/controller-manager.conf".to_string();
        let mut args = vec![
            ("allocate-node-cidrs", "true".to_string()),
            ("authentication-kubeconfig", conf.clone()),
            ("authorization-kubeconfig", conf.clone()),
            ("bind-address", self.kcm_bind.to_string()),
            ("client-ca-file", self.pki("ca.crt")),
            ("cluster-cidr", self.pod_subnet.clone()),
            ("cluster-name", "kubernetes".into()),
            ("cluster-signing-cert-file", self.pki("ca.crt")),
            ("cluster-signing-key-file", self.pki("ca.key")),
            ("controllers", "*,bootstrapsigner,tokencleaner".into()),
            ("kubeconfig", conf.clone()),
            ("leader-elect", "true".into()),
            (
                "requestheader-client-ca-file",
                self.pki("front-proxy-ca.crt"),
            ),
            ("root-ca-file", self.pki("ca.crt")),
            ("service-account-private-key-file", self.pki("sa.key")),
            ("service-cluster-ip-range", self.service_subnet.clone()),
            ("use-service-account-credentials", "true".into()),
        ];
        if self.kcm_port != 10257 {
            args.push(("secure-port", self.kcm_port.to_string()));
        }
        let mut s = header(&[], "kube-controller-manager");
        s.push_str(&command("kube-controller-manager", &args));
        let _ = writeln!(
            s,
            "    image: {}\n    imagePullPolicy: IfNotPresent",
            self.image("kube-controller-manager")
        );
        s.push_str(&self.probes(
            "kube-controller-manager",
            probe_address(self.kcm_bind),
            self.kcm_port,
            Paths {
                liveness: "/healthz",
                readiness: None,
                startup: "/healthz",
                scheme: "HTTPS",
                resources: "    resources:\n      requests:\n        cpu: 200m\n",
            },
        ));
        let k8s_certs = self.certificates_dir.as_str();
        let flex = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec";
        s.push_str(&mounts(&[
            ("/etc/ssl/certs", "ca-certs", true),
            ("/etc/ca-certificates", "etc-ca-certificates", true),
            (flex, "flexvolume-dir", false),
            (k8s_certs, "k8s-certs", true),
            (&conf, "kubeconfig", true),
            (
                "/usr/local/share/ca-certificates",
                "usr-local-share-ca-certificates",
                true,
            ),
            (
                "/usr/share/ca-certificates",
                "usr-share-ca-certificates",
                true,
            ),
        ]));
        s.push_str(&footer(&[
            ("ca-certs", "/etc/ssl/certs", "DirectoryOrCreate"),
            (
                "etc-ca-certificates",
                "/etc/ca-certificates",
                "DirectoryOrCreate",
            ),
            ("flexvolume-dir", flex, "DirectoryOrCreate"),
            ("k8s-certs", k8s_certs, "DirectoryOrCreate"),
            ("kubeconfig", &conf, "FileOrCreate"),
            (
                "usr-local-share-ca-certificates",
                "/usr/local/share/ca-certificates",
                "DirectoryOrCreate",
            ),
            (
                "usr-share-ca-certificates",
                "/usr/share/ca-certificates",
                "DirectoryOrCreate",
            ),
        ]));
        s
    }

    pub fn scheduler(&self) -> String {
        let conf = "/etc/kubernetes/scheduler.conf".to_string();
        let mut args = vec![
            ("authentication-kubeconfig", conf.clone()),
            ("authorization-kubeconfig", conf.clone()),
            ("bind-address", self.sched_bind.to_string()),
            ("kubeconfig", conf.clone()),
            ("leader-elect", "true".into()),
        ];
        if self.sched_port != 10259 {
            args.push(("secure-port", self.sched_port.to_string()));
        }
        let mut s = header(&[], "kube-scheduler");
        s.push_str(&command("kube-scheduler", &args));
        let _ = writeln!(
            s,
            "    image: {}\n    imagePullPolicy: IfNotPresent",
            self.image("kube-scheduler")
        );
        s.push_str(&self.probes(
            "kube-scheduler",
            probe_address(self.sched_bind),
            self.sched_port,
            Paths {
                liveness: "/healthz",
                readiness: None,
                startup: "/healthz",
                scheme: "HTTPS",
                resources: "    resources:\n      requests:\n        cpu: 100m\n",
            },
        ));
        s.push_str(&mounts(&[(&conf, "kubeconfig", true)]));
        s.push_str(&footer(&[("kubeconfig", &conf, "FileOrCreate")]));
        s
    }
}

/// What differs between the components' probes.
struct Paths {
    liveness: &'static str,
    readiness: Option<&'static str>,
    startup: &'static str,
    scheme: &'static str,
    /// The container's `resources:` block, which sits between
    /// `readinessProbe` and `startupProbe` in key order.
    resources: &'static str,
}

/// The loopback address of `ip`'s family.
pub fn loopback_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
    }
}

/// `host:port`, IPv6 in brackets (Go's `net.JoinHostPort`).
pub fn host_port(host: IpAddr, port: u16) -> String {
    std::net::SocketAddr::new(host, port).to_string()
}

/// kubeadm's `getProbeAddress`: no host for an unspecified address (the
/// kubelet then asks the pod's IP).
fn probe_address(ip: IpAddr) -> Option<IpAddr> {
    (!ip.is_unspecified()).then_some(ip)
}

/// A YAML string scalar as Go's YAML writer emits it in block context:
/// plain where it can be, else single-quoted (a leading indicator, a
/// trailing `:`, `: ` or ` #` inside).
fn scalar(s: &str) -> String {
    let first_indicator = s.starts_with([
        '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`',
    ]);
    let plain = !s.is_empty()
        && !first_indicator
        && !s.ends_with(':')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.starts_with(' ')
        && !s.ends_with(' ');
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// `apiVersion` through the container's `command`, key order as kubeadm
/// writes it.
fn header(annotations: &[(&str, String)], name: &str) -> String {
    let mut s = String::from("apiVersion: v1\nkind: Pod\nmetadata:\n");
    if !annotations.is_empty() {
        s.push_str("  annotations:\n");
        for (k, v) in annotations {
            let _ = writeln!(s, "    {k}: {}", scalar(v));
        }
    }
    let _ = write!(
        s,
        "  creationTimestamp: null\n  labels:\n    component: {name}\n    tier: control-plane\n  name: {name}\n  namespace: kube-system\nspec:\n  containers:\n"
    );
    s
}

/// `- command:` with the program and its flags sorted by name (kubeadm's
/// `ArgumentsToCommand`).
fn command(program: &str, args: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = args.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut s = format!("  - command:\n    - {program}\n");
    for (k, v) in sorted {
        let _ = writeln!(s, "    - {}", scalar(&format!("--{k}={v}")));
    }
    s
}

fn mounts(m: &[(&str, &str, bool)]) -> String {
    let mut s = String::from("    volumeMounts:\n");
    for (path, name, ro) in m {
        let _ = writeln!(s, "    - mountPath: {path}\n      name: {name}");
        if *ro {
            s.push_str("      readOnly: true\n");
        }
    }
    s
}

/// The pod's host network, priority, security context and volumes.
fn footer(volumes: &[(&str, &str, &str)]) -> String {
    let mut s = String::from(
        "  hostNetwork: true\n  priority: 2000001000\n  priorityClassName: system-node-critical\n  securityContext:\n    seccompProfile:\n      type: RuntimeDefault\n  volumes:\n",
    );
    for (name, path, kind) in volumes {
        let _ = writeln!(
            s,
            "  - hostPath:\n      path: {path}\n      type: {kind}\n    name: {name}"
        );
    }
    s.push_str("status: {}\n");
    s
}
