//! The node as it declares itself (SPEC 12, v1.3): one reader of a
//! control-plane static pod manifest that gives, per component, where it
//! listens, how the kubelet probes it, how long it is allowed to start and
//! which files it serves. Pure: the manifest's bytes in (and, for etcd's
//! endpoints, the caller's list of this host's addresses), a value out.
//!
//! Read as the kubelet and the components read it:
//!
//! - the probe is the container's `readinessProbe`, else `startupProbe`,
//!   else `livenessProbe` (the first of them with an `httpGet`), with its
//!   host, port (a named port resolved from the container's `ports`), path
//!   (default `/`) and scheme (default `HTTP`), as `pkg/kubelet/prober`
//!   asks it;
//! - flags by the component's own library ([`crate::rules::flags`]): pflag
//!   for kube-apiserver, kube-controller-manager and kube-scheduler, Go's
//!   `flag` for etcd; the last occurrence wins;
//! - etcd's URLs as etcd binds them: `scheme://IP:port`, IPv6 in brackets,
//!   `localhost` the one name allowed (it means loopback), no path, a port
//!   always written (`unix://` and `unixs://` sockets are not addresses and
//!   are left out).
//!
//! Where the node does not say, the component's own default is used (an
//! unset `--secure-port`, a probe without a host); where what it says is
//! not something the runbook can ask without guessing (a name to resolve,
//! a zone index, an IPv6 address without brackets, a port that does not
//! exist), the answer is a [`DeclError`] naming it, never a guess. kubeadm
//! writes the probes from these same flags
//! (`cmd/kubeadm/app/util/staticpod`): the apiserver's on its advertise
//! address, the controller-manager's and scheduler's on their
//! `--bind-address`, etcd's on the first `--listen-metrics-urls` URL
//! (plain HTTP, `127.0.0.1` or `::1` by the node's family).

use crate::rules::component::Component;
use crate::rules::flags::{self, FlagError, Syntax};
use crate::rules::yaml::YamlError;
use serde_json::Value;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// One component as its manifest declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub component: Component,
    /// Where and how its health is asked, or why that cannot be read
    /// without a guess (the flags are read either way).
    pub probe: Result<Probe, DeclError>,
    /// How long a failing probe means `starting`, not `unhealthy` (SPEC
    /// 12): the `startupProbe`'s `initialDelaySeconds + failureThreshold x
    /// periodSeconds`, else the chosen probe's `initialDelaySeconds`
    /// (Kubernetes' defaults: 0, 3, 10); zero without a probe.
    /// None when the probe cannot be read.
    pub start_allowance: Option<Duration>,
    /// Its addresses, ports and serving files.
    pub flags: Flags,
}

impl Declared {
    /// etcd's flags; `None` for the other three.
    pub fn etcd(&self) -> Option<&EtcdFlags> {
        match &self.flags {
            Flags::Etcd(e) => Some(e),
            Flags::Server(_) => None,
        }
    }

    /// The flags of kube-apiserver, kube-controller-manager or
    /// kube-scheduler; `None` for etcd.
    pub fn server(&self) -> Option<&ServerFlags> {
        match &self.flags {
            Flags::Server(s) => Some(s),
            Flags::Etcd(_) => None,
        }
    }
}

/// The flags that say where a component listens and what it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flags {
    /// kube-apiserver, kube-controller-manager, kube-scheduler (pflag).
    Server(ServerFlags),
    /// etcd (Go's `flag`).
    Etcd(EtcdFlags),
}

/// The serving flags of kube-apiserver, kube-controller-manager and
/// kube-scheduler (k8s.io/apiserver's secure serving options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFlags {
    /// `--bind-address`, if set (the component's default is `0.0.0.0`).
    pub bind_address: Option<IpAddr>,
    /// `--advertise-address`, kube-apiserver only (always `None` for the
    /// others, which have no such flag).
    pub advertise_address: Option<IpAddr>,
    /// `--secure-port`, or the component's default (6443, 10257, 10259).
    pub secure_port: u16,
    /// `--tls-cert-file` as written (an absolute node path); `None`: the
    /// component serves a certificate it signs itself at start (kubeadm
    /// sets it for kube-apiserver only).
    pub tls_cert_file: Option<String>,
}

/// etcd's listen and advertise URLs and its serving files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdFlags {
    /// `--listen-client-urls` (empty: not declared; etcd's own default is
    /// plain `http://localhost:2379`).
    pub listen_client_urls: Vec<EtcdUrl>,
    /// `--advertise-client-urls` (a name other than `localhost` is
    /// allowed here: etcd does not bind it).
    pub advertise_client_urls: Vec<EtcdUrl>,
    /// `--listen-peer-urls` (empty: not declared; etcd's own default is
    /// plain `http://localhost:2380`).
    pub listen_peer_urls: Vec<EtcdUrl>,
    /// `--listen-metrics-urls` (empty: none).
    pub listen_metrics_urls: Vec<EtcdUrl>,
    /// `--cert-file` as written (an absolute node path): served on the
    /// client URLs.
    pub cert_file: Option<String>,
    /// `--peer-cert-file` as written (an absolute node path): served on
    /// the peer URLs.
    pub peer_cert_file: Option<String>,
}

/// HTTP or HTTPS: a probe's scheme, an etcd URL's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    /// As a URL writes it: `http`, `https`.
    pub fn as_url(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

impl fmt::Display for Scheme {
    /// As a probe writes it: `HTTP`, `HTTPS`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scheme::Http => "HTTP",
            Scheme::Https => "HTTPS",
        })
    }
}

/// Which of the container's probes a [`Probe`] is, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeSource {
    Readiness,
    Startup,
    Liveness,
    /// The manifest has no `httpGet` probe: the component's default
    /// endpoint on its declared address and port (SPEC 10).
    Default,
}

impl ProbeSource {
    /// The manifest's key (`readinessProbe`), or `default`.
    pub fn key(self) -> &'static str {
        match self {
            ProbeSource::Readiness => "readinessProbe",
            ProbeSource::Startup => "startupProbe",
            ProbeSource::Liveness => "livenessProbe",
            ProbeSource::Default => "default",
        }
    }
}

impl fmt::Display for ProbeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// A component's health endpoint, as the kubelet asks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub source: ProbeSource,
    /// The address and port asked (an unspecified address already turned
    /// into the loopback address of its family).
    pub target: SocketAddr,
    /// The path with its query, as written (`/health?serializable=false`),
    /// starting with `/`.
    pub path: String,
    pub scheme: Scheme,
}

impl Probe {
    /// The URL asked, brackets for IPv6: `https://[::1]:6443/readyz`.
    pub fn url(&self) -> String {
        format!("{}://{}{}", self.scheme.as_url(), self.target, self.path)
    }
}

/// The host of an etcd URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlHost {
    Ip(IpAddr),
    /// `localhost`: loopback (Go listens on its IPv4 address, 127.0.0.1).
    Localhost,
    /// A name: only in `--advertise-client-urls`, which etcd never binds.
    Name(String),
}

/// One `scheme://host:port` URL of an etcd flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdUrl {
    pub scheme: Scheme,
    pub host: UrlHost,
    pub port: u16,
}

impl EtcdUrl {
    /// The address to connect to for this URL: `localhost` is 127.0.0.1,
    /// an unspecified address the loopback address of its family; `None`
    /// for a name.
    pub fn connect_ip(&self) -> Option<IpAddr> {
        match &self.host {
            UrlHost::Ip(ip) => Some(unspecified_to_loopback(*ip)),
            UrlHost::Localhost => Some(Ipv4Addr::LOCALHOST.into()),
            UrlHost::Name(_) => None,
        }
    }
}

impl fmt::Display for EtcdUrl {
    /// `https://[::1]:2379`, `https://localhost:2379`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match &self.host {
            UrlHost::Ip(ip) => url_host(*ip),
            UrlHost::Localhost => "localhost".to_string(),
            UrlHost::Name(n) => n.clone(),
        };
        write!(f, "{}://{host}:{}", self.scheme.as_url(), self.port)
    }
}

/// An address as the host of a URL: IPv6 in brackets (`[::1]`), IPv4 as
/// it is. (A [`SocketAddr`] writes itself the same way: `[::1]:2379`.)
pub fn url_host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// The loopback address of `ip`'s family: `127.0.0.1` or `::1`.
pub fn loopback_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
    }
}

/// An unspecified address (`0.0.0.0`, `::`: every address) as the one
/// asked, the loopback address of its family; any other as it is.
fn unspecified_to_loopback(ip: IpAddr) -> IpAddr {
    if ip.is_unspecified() {
        loopback_of(ip)
    } else {
        ip
    }
}

/// The leaf of SPEC section 2 that a serving file is, if it is one:
/// `/etc/kubernetes/pki/apiserver.crt`, `/etc/kubernetes/pki/etcd/server.crt`,
/// ... (an absolute node path as a flag writes it; `.` and repeated `/`
/// do not matter). `None`: a file kubeadm does not renew (SPEC 12,
/// "serves <file>, which kubeadm does not renew").
pub fn kubeadm_leaf(node_path: &str) -> Option<&'static crate::rules::pki::LeafSpec> {
    let rel = node_path.strip_prefix('/')?;
    let parts: Vec<&str> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return None;
    }
    let rel = parts.join("/");
    crate::rules::pki::LEAVES
        .iter()
        .find(|l| l.kind == crate::rules::pki::LeafKind::Pem && l.path == rel)
}

/// Why a manifest's declarations could not be read. Each names the
/// component and what it said; none is answered with a default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclError {
    #[error("{component} manifest{}{yaml}", yaml_sep(.yaml))]
    Yaml {
        component: Component,
        yaml: YamlError,
    },
    #[error("{0} manifest has no spec.containers")]
    NoContainers(Component),
    #[error("{component} manifest: {key} is not a list")]
    NotList {
        component: Component,
        key: &'static str,
    },
    /// `item`: the JSON value as Rust debug-prints it.
    #[error("{component} manifest: a {key} item is not a string: {item}")]
    NotStringItem {
        component: Component,
        key: &'static str,
        item: String,
    },
    #[error("{component} manifest: {flag}")]
    Flag {
        component: Component,
        flag: FlagError,
    },
    /// A probe, its `httpGet` or a `ports` item that is not a mapping.
    #[error("{component} manifest: {key} is not a mapping")]
    NotMapping { component: Component, key: String },
    /// A probe field Kubernetes would not accept (`field`:
    /// `startupProbe.periodSeconds`; `expected`: in words).
    #[error("{component} {field} is {value}, not {expected}")]
    ProbeField {
        component: Component,
        field: String,
        value: String,
        expected: &'static str,
    },
    /// `what`: `--secure-port`, `readinessProbe.httpGet.port`, `etcd
    /// --listen-client-urls URL https://127.0.0.1:x`.
    #[error("{component} {what}: {value} is not a port (1 to 65535)")]
    BadPort {
        component: Component,
        what: String,
        value: String,
    },
    #[error("{component} {probe}.httpGet.port names the port {name:?}, which the container does not declare (its named ports: {})", known_ports(.known))]
    NamedPortNotFound {
        component: Component,
        probe: ProbeSource,
        name: String,
        known: Vec<String>,
    },
    /// A host that is not an IP literal (`what`: the probe's host field or
    /// the flag); a name is never resolved.
    #[error("{component} {what} is {value:?}, not an IP address (names are not resolved)")]
    NotAnIp {
        component: Component,
        what: String,
        value: String,
    },
    #[error(
        "{component} {what} is {value:?}, an address with a zone index, which is not supported"
    )]
    Zone {
        component: Component,
        what: String,
        value: String,
    },
    #[error("etcd {flag} has an IPv6 address without brackets: {url} (write https://[addr]:port)")]
    UnbracketedIpv6 { flag: &'static str, url: String },
    #[error("etcd {flag} has a URL without a port: {url} (etcd requires one; none is guessed)")]
    UrlNoPort { flag: &'static str, url: String },
    #[error("etcd {flag} has a URL that is not scheme://host:port: {url}")]
    UrlShape { flag: &'static str, url: String },
    #[error("etcd {flag} has a URL whose scheme is not http, https, unix or unixs: {url}")]
    UrlScheme { flag: &'static str, url: String },
    /// kube-apiserver and etcd's client and peer ports serve TLS only: a
    /// plain HTTP probe there never answers.
    #[error("{component} {probe} asks plain HTTP on port {port}, which serves TLS only")]
    PlainHttp {
        component: Component,
        probe: ProbeSource,
        port: u16,
    },
    #[error("{component} {flag}={path} is not an absolute path without '..'")]
    NotNodePath {
        component: Component,
        flag: &'static str,
        path: String,
    },
    #[error("etcd --listen-client-urls={urls} has no https URL on loopback or on an address of this host: etcd's own questions have no address (no port is guessed)")]
    NoClientUrl { urls: String },
    #[error("etcd --listen-peer-urls={urls} has no https URL on loopback or on an address of this host: its peer port cannot be asked")]
    NoPeerUrl { urls: String },
    #[error("etcd has no httpGet probe and --listen-client-urls={urls} has no https URL on loopback: its health has no address (no port is guessed)")]
    EtcdNoProbe { urls: String },
}

/// A bound is told after a colon, a syntax error after a space (as the
/// node layer's manifest errors).
fn yaml_sep(e: &YamlError) -> &'static str {
    if e.is_bound() {
        ": "
    } else {
        " "
    }
}

fn known_ports(known: &[String]) -> String {
    if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    }
}

/// A flag's URL list as etcd was given it, for messages: `(none)` when
/// not declared.
fn urls_text(urls: &[EtcdUrl]) -> String {
    if urls.is_empty() {
        "(none)".to_string()
    } else {
        urls.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Read `component`'s declarations from its static pod manifest (the
/// container named like the component, else the first).
pub fn read(component: Component, bytes: &[u8]) -> Result<Declared, DeclError> {
    let doc = crate::rules::yaml::parse_value(bytes)
        .map_err(|yaml| DeclError::Yaml { component, yaml })?;
    let containers = doc
        .get("spec")
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or(DeclError::NoContainers(component))?;
    let container = containers
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(component.name()))
        .unwrap_or(&containers[0]);
    let argv = argv(component, container)?;
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let flags = match component {
        Component::Etcd => Flags::Etcd(etcd_flags(&argv)?),
        _ => Flags::Server(server_flags(component, &argv)?),
    };
    let (probe, start_allowance) = match probe(component, container, &flags) {
        Ok((p, allowance)) => (Ok(p), Some(allowance)),
        Err(e) => (Err(e), None),
    };
    Ok(Declared {
        component,
        probe,
        start_allowance,
        flags,
    })
}

/// The component's arguments: `command` (without the program) then
/// `args`; with `args` only, every item is an argument (the image's
/// entrypoint is the program).
fn argv(component: Component, c: &Value) -> Result<Vec<String>, DeclError> {
    let mut argv = Vec::new();
    for key in ["command", "args"] {
        let Some(v) = c.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let items = v.as_array().ok_or(DeclError::NotList { component, key })?;
        for item in items {
            // Kubernetes decodes command and args as strings: a manifest
            // with another type never runs.
            argv.push(
                item.as_str()
                    .ok_or_else(|| DeclError::NotStringItem {
                        component,
                        key,
                        item: format!("{item:?}"),
                    })?
                    .to_string(),
            );
        }
    }
    let has_command = c.get("command").is_some_and(|v| !v.is_null());
    if has_command && !argv.is_empty() {
        argv.remove(0);
    }
    Ok(argv)
}

/// The component's default `--secure-port`.
fn default_secure_port(component: Component) -> u16 {
    match component {
        Component::KubeControllerManager => 10257,
        Component::KubeScheduler => 10259,
        _ => 6443,
    }
}

fn server_flags(component: Component, argv: &[&str]) -> Result<ServerFlags, DeclError> {
    let wanted: &[&str] = if component == Component::KubeApiserver {
        &[
            "bind-address",
            "advertise-address",
            "secure-port",
            "tls-cert-file",
        ]
    } else {
        &["bind-address", "secure-port", "tls-cert-file"]
    };
    let found = flags::parse(argv, Syntax::Pflag, wanted)
        .map_err(|flag| DeclError::Flag { component, flag })?;
    let ip = |name: &'static str| -> Result<Option<IpAddr>, DeclError> {
        found
            .get(name)
            .map(|v| ip_literal(component, &format!("--{name}"), v))
            .transpose()
    };
    let secure_port = match found.get("secure-port") {
        None => default_secure_port(component),
        Some(v) => flags::parse_int(v)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| DeclError::BadPort {
                component,
                what: "--secure-port".into(),
                value: v.clone(),
            })?,
    };
    Ok(ServerFlags {
        bind_address: ip("bind-address")?,
        advertise_address: ip("advertise-address")?,
        secure_port,
        tls_cert_file: node_path(component, "--tls-cert-file", found.get("tls-cert-file"))?,
    })
}

fn etcd_flags(argv: &[&str]) -> Result<EtcdFlags, DeclError> {
    const C: Component = Component::Etcd;
    let found = flags::parse(
        argv,
        Syntax::GoFlag,
        &[
            "listen-client-urls",
            "advertise-client-urls",
            "listen-peer-urls",
            "listen-metrics-urls",
            "cert-file",
            "peer-cert-file",
        ],
    )
    .map_err(|flag| DeclError::Flag { component: C, flag })?;
    let urls = |name: &'static str, flag: &'static str, names: bool| {
        found
            .get(name)
            .map(|v| parse_urls(flag, v, names))
            .transpose()
            .map(Option::unwrap_or_default)
    };
    Ok(EtcdFlags {
        listen_client_urls: urls("listen-client-urls", "--listen-client-urls", false)?,
        advertise_client_urls: urls("advertise-client-urls", "--advertise-client-urls", true)?,
        listen_peer_urls: urls("listen-peer-urls", "--listen-peer-urls", false)?,
        listen_metrics_urls: urls("listen-metrics-urls", "--listen-metrics-urls", false)?,
        cert_file: node_path(C, "--cert-file", found.get("cert-file"))?,
        peer_cert_file: node_path(C, "--peer-cert-file", found.get("peer-cert-file"))?,
    })
}

/// A serving file's flag: an absolute path without `..`, as written.
fn node_path(
    component: Component,
    flag: &'static str,
    v: Option<&String>,
) -> Result<Option<String>, DeclError> {
    match v {
        None => Ok(None),
        Some(p) if p.starts_with('/') && !p.split('/').any(|c| c == "..") => Ok(Some(p.clone())),
        Some(p) => Err(DeclError::NotNodePath {
            component,
            flag,
            path: p.clone(),
        }),
    }
}

/// An IP literal as a flag or a probe's host writes it (no brackets, no
/// zone index).
fn ip_literal(component: Component, what: &str, v: &str) -> Result<IpAddr, DeclError> {
    if v.contains('%') {
        return Err(DeclError::Zone {
            component,
            what: what.to_string(),
            value: v.to_string(),
        });
    }
    v.parse::<IpAddr>().map_err(|_| DeclError::NotAnIp {
        component,
        what: what.to_string(),
        value: v.to_string(),
    })
}

/// A comma-separated URL list of an etcd flag, as etcd's `types.NewURLs`
/// reads it; `names`: a host name other than `localhost` is allowed (the
/// advertise URLs, which are not bound).
fn parse_urls(flag: &'static str, value: &str, names: bool) -> Result<Vec<EtcdUrl>, DeclError> {
    let mut out = Vec::new();
    for raw in value.split(',') {
        if let Some(u) = parse_url(flag, raw.trim(), names)? {
            out.push(u);
        }
    }
    Ok(out)
}

/// One etcd URL; `None` for a unix socket.
fn parse_url(flag: &'static str, url: &str, names: bool) -> Result<Option<EtcdUrl>, DeclError> {
    const C: Component = Component::Etcd;
    let shape = || DeclError::UrlShape {
        flag,
        url: url.to_string(),
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(if url.contains(':') {
            shape()
        } else {
            DeclError::UrlScheme {
                flag,
                url: url.to_string(),
            }
        });
    };
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        // A socket, not an address: never asked.
        "unix" | "unixs" => return Ok(None),
        _ => {
            return Err(DeclError::UrlScheme {
                flag,
                url: url.to_string(),
            })
        }
    };
    let what = || format!("{flag} URL {url}");
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let Some((addr, after)) = inner.split_once(']') else {
            return Err(shape());
        };
        if addr.contains('%') {
            return Err(DeclError::Zone {
                component: C,
                what: what(),
                value: addr.to_string(),
            });
        }
        let ip: Ipv6Addr = addr.parse().map_err(|_| DeclError::NotAnIp {
            component: C,
            what: what(),
            value: addr.to_string(),
        })?;
        let port = match after.strip_prefix(':') {
            Some(p) => p,
            None if after.is_empty() => {
                return Err(DeclError::UrlNoPort {
                    flag,
                    url: url.to_string(),
                })
            }
            None => return Err(shape()),
        };
        (UrlHost::Ip(ip.into()), port)
    } else {
        if rest.contains(['/', '?', '#', '@']) {
            return Err(shape());
        }
        match rest.matches(':').count() {
            0 => {
                return Err(DeclError::UrlNoPort {
                    flag,
                    url: url.to_string(),
                })
            }
            1 => {}
            _ => {
                return Err(DeclError::UnbracketedIpv6 {
                    flag,
                    url: url.to_string(),
                })
            }
        }
        let (h, p) = rest.split_once(':').ok_or_else(shape)?;
        let host = if h == "localhost" {
            UrlHost::Localhost
        } else if let Ok(v4) = h.parse::<Ipv4Addr>() {
            UrlHost::Ip(v4.into())
        } else if names && !h.is_empty() && !h.contains('%') {
            UrlHost::Name(h.to_string())
        } else if h.contains('%') {
            return Err(DeclError::Zone {
                component: C,
                what: what(),
                value: h.to_string(),
            });
        } else {
            return Err(DeclError::NotAnIp {
                component: C,
                what: what(),
                value: h.to_string(),
            });
        };
        (host, p)
    };
    // What follows the port: a path, a query, a fragment (etcd: "URL
    // must not contain a path").
    if port.contains(['/', '?', '#']) {
        return Err(shape());
    }
    if port.is_empty() {
        return Err(DeclError::UrlNoPort {
            flag,
            url: url.to_string(),
        });
    }
    let port = port_number(port).ok_or_else(|| DeclError::BadPort {
        component: C,
        what: what(),
        value: port.to_string(),
    })?;
    Ok(Some(EtcdUrl { scheme, host, port }))
}

/// Decimal digits, 1 to 65535 (a URL's port).
fn port_number(s: &str) -> Option<u16> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok().filter(|p| *p > 0)
}

/// A probe's `httpGet` as written, before its host is decided.
struct HttpGet {
    source: ProbeSource,
    host: Option<IpAddr>,
    port: u16,
    path: String,
    scheme: Scheme,
}

/// The probe the kubelet's health means and the start allowance.
fn probe(component: Component, c: &Value, flags: &Flags) -> Result<(Probe, Duration), DeclError> {
    let mut chosen: Option<(HttpGet, &Value)> = None;
    let mut startup: Option<&Value> = None;
    for source in [
        ProbeSource::Readiness,
        ProbeSource::Startup,
        ProbeSource::Liveness,
    ] {
        let Some(p) = c.get(source.key()).filter(|v| !v.is_null()) else {
            continue;
        };
        if !p.is_object() {
            return Err(DeclError::NotMapping {
                component,
                key: source.key().to_string(),
            });
        }
        if source == ProbeSource::Startup {
            startup = Some(p);
        }
        if chosen.is_none() {
            // A probe without httpGet (exec, tcpSocket, grpc) says nothing
            // the runbook can ask: the next one is used.
            if let Some(get) = http_get(component, c, source, p)? {
                chosen = Some((get, p));
            }
        }
    }
    let allowance = match (startup, &chosen) {
        (Some(s), _) => {
            let delay = probe_int(component, ProbeSource::Startup, s, "initialDelaySeconds", 0)?;
            let failures = probe_int(component, ProbeSource::Startup, s, "failureThreshold", 3)?;
            let period = probe_int(component, ProbeSource::Startup, s, "periodSeconds", 10)?;
            Duration::from_secs(delay + failures * period)
        }
        (None, Some((get, p))) => Duration::from_secs(probe_int(
            component,
            get.source,
            p,
            "initialDelaySeconds",
            0,
        )?),
        (None, None) => Duration::ZERO,
    };
    let probe = match chosen {
        Some((get, _)) => {
            check_tls(component, flags, &get)?;
            let ip = match get.host {
                Some(ip) => unspecified_to_loopback(ip),
                None => default_host(flags, get.port),
            };
            Probe {
                source: get.source,
                target: SocketAddr::new(ip, get.port),
                path: get.path,
                scheme: get.scheme,
            }
        }
        None => default_probe(component, flags)?,
    };
    Ok((probe, allowance))
}

/// A probe's integer field (`periodSeconds`), with Kubernetes' default
/// for an absent or zero one (zero initial delay is zero).
fn probe_int(
    component: Component,
    source: ProbeSource,
    p: &Value,
    field: &str,
    default: u64,
) -> Result<u64, DeclError> {
    let Some(v) = p.get(field).filter(|v| !v.is_null()) else {
        return Ok(default);
    };
    let n = v
        .as_u64()
        .filter(|n| *n <= i32::MAX as u64)
        .ok_or_else(|| DeclError::ProbeField {
            component,
            field: format!("{source}.{field}"),
            value: v.to_string(),
            expected: "a whole number from 0 to 2147483647",
        })?;
    Ok(if n == 0 { default } else { n })
}

/// The probe's `httpGet`, read; `None` when the probe has none.
fn http_get(
    component: Component,
    c: &Value,
    source: ProbeSource,
    p: &Value,
) -> Result<Option<HttpGet>, DeclError> {
    let Some(get) = p.get("httpGet").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    if !get.is_object() {
        return Err(DeclError::NotMapping {
            component,
            key: format!("{source}.httpGet"),
        });
    }
    let field = |name: &str| format!("{source}.httpGet.{name}");
    let host = match get.get("host") {
        None | Some(Value::Null) => None,
        Some(Value::String(h)) if h.is_empty() => None,
        Some(Value::String(h)) => Some(ip_literal(component, &field("host"), h)?),
        Some(other) => {
            return Err(DeclError::ProbeField {
                component,
                field: field("host"),
                value: other.to_string(),
                expected: "an IP address",
            })
        }
    };
    let port = match get.get("port") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| DeclError::BadPort {
                component,
                what: field("port"),
                value: n.to_string(),
            })?,
        Some(Value::String(name)) => named_port(component, c, source, name)?,
        other => {
            return Err(DeclError::BadPort {
                component,
                what: field("port"),
                value: other.map_or_else(|| "missing".to_string(), Value::to_string),
            })
        }
    };
    let path = match get.get("path") {
        None | Some(Value::Null) => "/".to_string(),
        Some(Value::String(p)) if p.is_empty() => "/".to_string(),
        Some(Value::String(p)) if p.starts_with('/') => p.clone(),
        // The kubelet's URL puts the slash between host and path.
        Some(Value::String(p)) => format!("/{p}"),
        Some(other) => {
            return Err(DeclError::ProbeField {
                component,
                field: field("path"),
                value: other.to_string(),
                expected: "a path",
            })
        }
    };
    let scheme = match get.get("scheme") {
        None | Some(Value::Null) => Scheme::Http,
        Some(Value::String(s)) if s == "HTTP" => Scheme::Http,
        Some(Value::String(s)) if s == "HTTPS" => Scheme::Https,
        Some(other) => {
            return Err(DeclError::ProbeField {
                component,
                field: field("scheme"),
                value: other.to_string(),
                expected: "HTTP or HTTPS",
            })
        }
    };
    Ok(Some(HttpGet {
        source,
        host,
        port,
        path,
        scheme,
    }))
}

/// A named probe port: the `containerPort` of the container's port of
/// that name (as the kubelet's `FindPortByName`).
fn named_port(
    component: Component,
    c: &Value,
    source: ProbeSource,
    name: &str,
) -> Result<u16, DeclError> {
    let ports = match c.get("ports") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => {
            return Err(DeclError::NotList {
                component,
                key: "ports",
            })
        }
    };
    let mut known = Vec::new();
    for p in ports {
        let Some(n) = p.get("name").and_then(Value::as_str) else {
            continue;
        };
        if n == name {
            let cp = p.get("containerPort");
            return cp
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| DeclError::BadPort {
                    component,
                    what: format!("ports[{name}].containerPort"),
                    value: cp.map_or_else(|| "missing".to_string(), Value::to_string),
                });
        }
        known.push(n.to_string());
    }
    Err(DeclError::NamedPortNotFound {
        component,
        probe: source,
        name: name.to_string(),
        known,
    })
}

/// kube-apiserver serves TLS only; so do etcd's https client and peer
/// ports (its metrics port may be plain HTTP, as kubeadm writes it).
fn check_tls(component: Component, flags: &Flags, get: &HttpGet) -> Result<(), DeclError> {
    if get.scheme == Scheme::Https {
        return Ok(());
    }
    let tls_only = match flags {
        Flags::Server(_) => component == Component::KubeApiserver,
        Flags::Etcd(e) => e
            .listen_client_urls
            .iter()
            .chain(&e.listen_peer_urls)
            .any(|u| u.scheme == Scheme::Https && u.port == get.port),
    };
    if tls_only {
        return Err(DeclError::PlainHttp {
            component,
            probe: get.source,
            port: get.port,
        });
    }
    Ok(())
}

/// Where a component binds, as an address to ask: `--bind-address`, else
/// (kube-apiserver) `--advertise-address`, else every address; every
/// address is asked on loopback of its family.
fn bind_ip(s: &ServerFlags) -> IpAddr {
    let ip = s
        .bind_address
        .or(s.advertise_address)
        .unwrap_or(Ipv4Addr::UNSPECIFIED.into());
    unspecified_to_loopback(ip)
}

/// The host of a probe that has none: the component's bind address; for
/// etcd, the listen URL (metrics first, then client) on the probe's port,
/// else loopback.
fn default_host(flags: &Flags, port: u16) -> IpAddr {
    match flags {
        Flags::Server(s) => bind_ip(s),
        Flags::Etcd(e) => e
            .listen_metrics_urls
            .iter()
            .chain(&e.listen_client_urls)
            .filter(|u| u.port == port)
            .find_map(EtcdUrl::connect_ip)
            .unwrap_or(Ipv4Addr::LOCALHOST.into()),
    }
}

/// No httpGet probe: the component's own endpoint (SPEC 10) on its
/// declared address and port.
fn default_probe(component: Component, flags: &Flags) -> Result<Probe, DeclError> {
    let (target, path) = match flags {
        Flags::Server(s) => {
            let path = if component == Component::KubeApiserver {
                "/readyz"
            } else {
                "/healthz"
            };
            (SocketAddr::new(bind_ip(s), s.secure_port), path)
        }
        Flags::Etcd(e) => {
            let t =
                best_local(&e.listen_client_urls, &[]).ok_or_else(|| DeclError::EtcdNoProbe {
                    urls: urls_text(&e.listen_client_urls),
                })?;
            (t, "/health")
        }
    };
    Ok(Probe {
        source: ProbeSource::Default,
        target,
        path: path.to_string(),
        scheme: Scheme::Https,
    })
}

/// The https URL of `urls` best asked from this host: loopback first
/// (`127.0.0.1`, `[::1]`, `localhost`, another loopback address, an
/// unspecified address asked on loopback), else one whose address is in
/// `host_ips`; the first written among equals.
fn best_local(urls: &[EtcdUrl], host_ips: &[IpAddr]) -> Option<SocketAddr> {
    let rank = |u: &EtcdUrl| -> Option<u8> {
        match &u.host {
            UrlHost::Ip(IpAddr::V4(v4)) if *v4 == Ipv4Addr::LOCALHOST => Some(0),
            UrlHost::Ip(IpAddr::V6(v6)) if *v6 == Ipv6Addr::LOCALHOST => Some(1),
            UrlHost::Localhost => Some(2),
            UrlHost::Ip(ip) if ip.is_loopback() => Some(3),
            UrlHost::Ip(ip) if ip.is_unspecified() => Some(4),
            UrlHost::Ip(ip) if host_ips.contains(ip) => Some(5),
            _ => None,
        }
    };
    urls.iter()
        .filter(|u| u.scheme == Scheme::Https)
        .filter_map(|u| Some((rank(u)?, u)))
        .min_by_key(|(r, _)| *r)
        .and_then(|(_, u)| Some(SocketAddr::new(u.connect_ip()?, u.port)))
}

/// Where etcd's own questions (member list, `/health`, the quorum rule)
/// go: the https URL of `--listen-client-urls` on loopback (`127.0.0.1`,
/// then `[::1]`, then `localhost`), else one on an address of this host
/// (`host_ips`, as the caller found them). None usable: an error naming
/// the URLs, never a guessed 2379.
pub fn etcd_client_target(etcd: &EtcdFlags, host_ips: &[IpAddr]) -> Result<SocketAddr, DeclError> {
    best_local(&etcd.listen_client_urls, host_ips).ok_or_else(|| DeclError::NoClientUrl {
        urls: urls_text(&etcd.listen_client_urls),
    })
}

/// Where etcd's peer port is asked (the served `peer.crt`, SPEC 4
/// postflight): the https URL of `--listen-peer-urls` on loopback or on
/// an address of this host (`host_ips`), an unspecified address asked on
/// loopback of its family, preferred as [`etcd_client_target`]. None
/// usable: an error naming the URLs.
pub fn etcd_peer_target(etcd: &EtcdFlags, host_ips: &[IpAddr]) -> Result<SocketAddr, DeclError> {
    best_local(&etcd.listen_peer_urls, host_ips).ok_or_else(|| DeclError::NoPeerUrl {
        urls: urls_text(&etcd.listen_peer_urls),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE_ETCD: &[u8] =
        include_bytes!("../../fixtures/nodes/rsa/etc/kubernetes/manifests/etcd.yaml");
    const FIXTURE_APISERVER: &[u8] =
        include_bytes!("../../fixtures/nodes/rsa/etc/kubernetes/manifests/kube-apiserver.yaml");
    const FIXTURE_CM: &[u8] = include_bytes!(
        "../../fixtures/nodes/rsa/etc/kubernetes/manifests/kube-controller-manager.yaml"
    );
    const FIXTURE_SCHEDULER: &[u8] =
        include_bytes!("../../fixtures/nodes/rsa/etc/kubernetes/manifests/kube-scheduler.yaml");

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }
    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// A pod with one container of `component`'s name: `command` items
    /// (the program first) and the rest of the container's YAML (indented
    /// four spaces). An etcd pod with no `rest` gets kubeadm's liveness
    /// probe on the metrics port, so that its URLs alone decide.
    fn pod(component: Component, command: &[&str], rest: &str) -> Vec<u8> {
        if component == Component::Etcd && rest.is_empty() {
            let probe = probe_yaml(
                "livenessProbe",
                Some("127.0.0.1"),
                "2381",
                "/health",
                "HTTP",
            );
            return bare_pod(component, command, &probe);
        }
        bare_pod(component, command, rest)
    }

    /// [`pod`], with nothing added.
    fn bare_pod(component: Component, command: &[&str], rest: &str) -> Vec<u8> {
        let mut s = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {c}\n  namespace: kube-system\nspec:\n  containers:\n  - name: {c}\n    command:\n    - {c}\n",
            c = component.name()
        );
        for item in command {
            s.push_str(&format!("    - '{item}'\n"));
        }
        s.push_str(rest);
        s.push_str("  hostNetwork: true\n");
        s.into_bytes()
    }

    fn probe_yaml(key: &str, host: Option<&str>, port: &str, path: &str, scheme: &str) -> String {
        let host = host.map_or(String::new(), |h| format!("        host: {h}\n"));
        format!(
            "    {key}:\n      failureThreshold: 8\n      httpGet:\n{host}        path: {path}\n        port: {port}\n        scheme: {scheme}\n      initialDelaySeconds: 10\n      periodSeconds: 10\n      timeoutSeconds: 15\n"
        )
    }

    // ---- the fixture node (IPv4, kubeadm v1.31 with etcd 3.5.15) ----

    #[test]
    fn fixture_apiserver() {
        let d = read(Component::KubeApiserver, FIXTURE_APISERVER).unwrap();
        assert_eq!(
            d.probe.clone().unwrap(),
            Probe {
                source: ProbeSource::Readiness,
                target: sa("10.0.0.11:6443"),
                path: "/readyz".into(),
                scheme: Scheme::Https,
            }
        );
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://10.0.0.11:6443/readyz"
        );
        // startupProbe: 10 + 24 x 10.
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(250));
        let s = d.server().unwrap();
        assert_eq!(s.advertise_address, Some(ip("10.0.0.11")));
        assert_eq!(s.bind_address, None);
        assert_eq!(s.secure_port, 6443);
        assert_eq!(
            s.tls_cert_file.as_deref(),
            Some("/etc/kubernetes/pki/apiserver.crt")
        );
        assert_eq!(
            kubeadm_leaf(s.tls_cert_file.as_deref().unwrap()).map(|l| l.name),
            Some("apiserver")
        );
        assert!(d.etcd().is_none());
    }

    #[test]
    fn fixture_controller_manager_and_scheduler() {
        let cm = read(Component::KubeControllerManager, FIXTURE_CM).unwrap();
        // No readinessProbe: the startupProbe.
        assert_eq!(cm.probe.as_ref().unwrap().source, ProbeSource::Startup);
        assert_eq!(
            cm.probe.as_ref().unwrap().url(),
            "https://127.0.0.1:10257/healthz"
        );
        assert_eq!(cm.start_allowance.unwrap(), Duration::from_secs(250));
        let s = cm.server().unwrap();
        assert_eq!(s.bind_address, Some(ip("127.0.0.1")));
        assert_eq!(s.secure_port, 10257);
        assert_eq!(s.tls_cert_file, None);
        assert_eq!(s.advertise_address, None);

        let sc = read(Component::KubeScheduler, FIXTURE_SCHEDULER).unwrap();
        assert_eq!(
            sc.probe.as_ref().unwrap().url(),
            "https://127.0.0.1:10259/healthz"
        );
        assert_eq!(sc.server().unwrap().secure_port, 10259);
    }

    #[test]
    fn fixture_etcd() {
        let d = read(Component::Etcd, FIXTURE_ETCD).unwrap();
        // kubeadm >= 1.31's etcd probes: /readyz and /livez on the
        // metrics port, plain HTTP.
        assert_eq!(
            d.probe.clone().unwrap(),
            Probe {
                source: ProbeSource::Readiness,
                target: sa("127.0.0.1:2381"),
                path: "/readyz".into(),
                scheme: Scheme::Http,
            }
        );
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(250));
        let e = d.etcd().unwrap();
        assert_eq!(
            urls_text(&e.listen_client_urls),
            "https://127.0.0.1:2379,https://10.0.0.11:2379"
        );
        assert_eq!(
            urls_text(&e.advertise_client_urls),
            "https://10.0.0.11:2379"
        );
        assert_eq!(urls_text(&e.listen_peer_urls), "https://10.0.0.11:2380");
        assert_eq!(urls_text(&e.listen_metrics_urls), "http://127.0.0.1:2381");
        assert_eq!(
            e.cert_file.as_deref(),
            Some("/etc/kubernetes/pki/etcd/server.crt")
        );
        assert_eq!(
            e.peer_cert_file.as_deref(),
            Some("/etc/kubernetes/pki/etcd/peer.crt")
        );
        assert_eq!(etcd_client_target(e, &[]), Ok(sa("127.0.0.1:2379")));
        assert_eq!(
            etcd_client_target(e, &[ip("10.0.0.11")]),
            Ok(sa("127.0.0.1:2379")),
            "loopback before the host's address"
        );
        assert_eq!(
            etcd_peer_target(e, &[ip("10.0.0.11")]),
            Ok(sa("10.0.0.11:2380"))
        );
        assert_eq!(
            etcd_peer_target(e, &[ip("10.0.0.12")]),
            Err(DeclError::NoPeerUrl {
                urls: "https://10.0.0.11:2380".into()
            }),
            "not an address of this host"
        );
    }

    // ---- kubeadm v1.30's IPv6 single-stack manifests, as it writes them ----

    const V6_ETCD: &str = "apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://[2001:db8::11]:2379
  creationTimestamp: null
  labels:
    component: etcd
    tier: control-plane
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=https://[2001:db8::11]:2379
    - --cert-file=/etc/kubernetes/pki/etcd/server.crt
    - --client-cert-auth=true
    - --data-dir=/var/lib/etcd
    - --experimental-initial-corrupt-check=true
    - --experimental-watch-progress-notify-interval=5s
    - --initial-advertise-peer-urls=https://[2001:db8::11]:2380
    - --initial-cluster=cp-1=https://[2001:db8::11]:2380
    - --key-file=/etc/kubernetes/pki/etcd/server.key
    - --listen-client-urls=https://[::1]:2379,https://[2001:db8::11]:2379
    - --listen-metrics-urls=http://[::1]:2381
    - --listen-peer-urls=https://[2001:db8::11]:2380
    - --name=cp-1
    - --peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt
    - --peer-client-cert-auth=true
    - --peer-key-file=/etc/kubernetes/pki/etcd/peer.key
    - --peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt
    - --snapshot-count=10000
    - --trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt
    image: registry.k8s.io/etcd:3.5.12-0
    imagePullPolicy: IfNotPresent
    livenessProbe:
      failureThreshold: 8
      httpGet:
        host: ::1
        path: /health?exclude=NOSPACE&serializable=true
        port: 2381
        scheme: HTTP
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    name: etcd
    resources:
      requests:
        cpu: 100m
        memory: 100Mi
    startupProbe:
      failureThreshold: 24
      httpGet:
        host: ::1
        path: /health?serializable=false
        port: 2381
        scheme: HTTP
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
    - mountPath: /etc/kubernetes/pki/etcd
      name: etcd-certs
  hostNetwork: true
  priority: 2000001000
  priorityClassName: system-node-critical
  securityContext:
    seccompProfile:
      type: RuntimeDefault
  volumes:
  - hostPath:
      path: /etc/kubernetes/pki/etcd
      type: DirectoryOrCreate
    name: etcd-certs
  - hostPath:
      path: /var/lib/etcd
      type: DirectoryOrCreate
    name: etcd-data
status: {}
";

    const V6_APISERVER: &str = "apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: '[2001:db8::11]:6443'
  creationTimestamp: null
  labels:
    component: kube-apiserver
    tier: control-plane
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
    - --advertise-address=2001:db8::11
    - --allow-privileged=true
    - --authorization-mode=Node,RBAC
    - --client-ca-file=/etc/kubernetes/pki/ca.crt
    - --enable-admission-plugins=NodeRestriction
    - --enable-bootstrap-token-auth=true
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --etcd-servers=https://[::1]:2379
    - --kubelet-client-certificate=/etc/kubernetes/pki/apiserver-kubelet-client.crt
    - --kubelet-client-key=/etc/kubernetes/pki/apiserver-kubelet-client.key
    - --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname
    - --proxy-client-cert-file=/etc/kubernetes/pki/front-proxy-client.crt
    - --proxy-client-key-file=/etc/kubernetes/pki/front-proxy-client.key
    - --requestheader-allowed-names=front-proxy-client
    - --requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt
    - --requestheader-extra-headers-prefix=X-Remote-Extra-
    - --requestheader-group-headers=X-Remote-Group
    - --requestheader-username-headers=X-Remote-User
    - --secure-port=6443
    - --service-account-issuer=https://kubernetes.default.svc.cluster.local
    - --service-account-key-file=/etc/kubernetes/pki/sa.pub
    - --service-account-signing-key-file=/etc/kubernetes/pki/sa.key
    - --service-cluster-ip-range=fd00:10:96::/112
    - --tls-cert-file=/etc/kubernetes/pki/apiserver.crt
    - --tls-private-key-file=/etc/kubernetes/pki/apiserver.key
    image: registry.k8s.io/kube-apiserver:v1.30.8
    imagePullPolicy: IfNotPresent
    livenessProbe:
      failureThreshold: 8
      httpGet:
        host: 2001:db8::11
        path: /livez
        port: 6443
        scheme: HTTPS
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    name: kube-apiserver
    readinessProbe:
      failureThreshold: 3
      httpGet:
        host: 2001:db8::11
        path: /readyz
        port: 6443
        scheme: HTTPS
      periodSeconds: 1
      timeoutSeconds: 15
    resources:
      requests:
        cpu: 250m
    startupProbe:
      failureThreshold: 24
      httpGet:
        host: 2001:db8::11
        path: /livez
        port: 6443
        scheme: HTTPS
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    volumeMounts:
    - mountPath: /etc/kubernetes/pki
      name: k8s-certs
      readOnly: true
  hostNetwork: true
  priority: 2000001000
  priorityClassName: system-node-critical
  securityContext:
    seccompProfile:
      type: RuntimeDefault
  volumes:
  - hostPath:
      path: /etc/kubernetes/pki
      type: DirectoryOrCreate
    name: k8s-certs
status: {}
";

    /// kubeadm v1.30's controller-manager or scheduler with its probe
    /// host from `bind` (kubeadm's default `127.0.0.1`, or `::1` from
    /// extraArgs).
    fn v6_go_component(component: Component, bind: &str, port: u16) -> Vec<u8> {
        let c = component.name();
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: null
  labels:
    component: {c}
    tier: control-plane
  name: {c}
  namespace: kube-system
spec:
  containers:
  - command:
    - {c}
    - --authentication-kubeconfig=/etc/kubernetes/{k}.conf
    - --authorization-kubeconfig=/etc/kubernetes/{k}.conf
    - --bind-address={bind}
    - --kubeconfig=/etc/kubernetes/{k}.conf
    - --leader-elect=true
    image: registry.k8s.io/{c}:v1.30.8
    imagePullPolicy: IfNotPresent
    livenessProbe:
      failureThreshold: 8
      httpGet:
        host: {bind}
        path: /healthz
        port: {port}
        scheme: HTTPS
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
    name: {c}
    startupProbe:
      failureThreshold: 24
      httpGet:
        host: {bind}
        path: /healthz
        port: {port}
        scheme: HTTPS
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 15
  hostNetwork: true
status: {{}}
",
            k = if component == Component::KubeScheduler {
                "scheduler"
            } else {
                "controller-manager"
            }
        )
        .into_bytes()
    }

    #[test]
    fn ipv6_single_stack_etcd() {
        let d = read(Component::Etcd, V6_ETCD.as_bytes()).unwrap();
        // No readinessProbe in v1.30: the startupProbe, plain HTTP on the
        // metrics port (allowed: not the client port).
        assert_eq!(
            d.probe.clone().unwrap(),
            Probe {
                source: ProbeSource::Startup,
                target: sa("[::1]:2381"),
                path: "/health?serializable=false".into(),
                scheme: Scheme::Http,
            }
        );
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "http://[::1]:2381/health?serializable=false"
        );
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(250));
        let e = d.etcd().unwrap();
        assert_eq!(
            e.listen_client_urls,
            vec![
                EtcdUrl {
                    scheme: Scheme::Https,
                    host: UrlHost::Ip(ip("::1")),
                    port: 2379
                },
                EtcdUrl {
                    scheme: Scheme::Https,
                    host: UrlHost::Ip(ip("2001:db8::11")),
                    port: 2379
                },
            ]
        );
        assert_eq!(urls_text(&e.listen_metrics_urls), "http://[::1]:2381");
        let c = etcd_client_target(e, &[ip("2001:db8::11")]).unwrap();
        assert_eq!(c, sa("[::1]:2379"));
        assert_eq!(c.to_string(), "[::1]:2379", "brackets for IPv6");
        assert_eq!(
            etcd_peer_target(e, &[ip("fe80::1"), ip("2001:db8::11")]),
            Ok(sa("[2001:db8::11]:2380"))
        );
        assert!(etcd_peer_target(e, &[ip("10.0.0.11")]).is_err());
    }

    #[test]
    fn ipv6_single_stack_etcd_liveness_when_startup_is_gone() {
        // Without the startupProbe, the livenessProbe kubeadm writes.
        let m = V6_ETCD.replace("    startupProbe:\n", "    startupProbeGone:\n");
        let d = read(Component::Etcd, m.as_bytes()).unwrap();
        assert_eq!(d.probe.as_ref().unwrap().source, ProbeSource::Liveness);
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "http://[::1]:2381/health?exclude=NOSPACE&serializable=true"
        );
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(10));
    }

    #[test]
    fn ipv6_single_stack_apiserver() {
        let d = read(Component::KubeApiserver, V6_APISERVER.as_bytes()).unwrap();
        assert_eq!(d.probe.as_ref().unwrap().source, ProbeSource::Readiness);
        assert_eq!(d.probe.as_ref().unwrap().target, sa("[2001:db8::11]:6443"));
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://[2001:db8::11]:6443/readyz"
        );
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(250));
        let s = d.server().unwrap();
        assert_eq!(s.advertise_address, Some(ip("2001:db8::11")));
        // Without its host, the probe asks the advertise address.
        let m = V6_APISERVER.replace("        host: 2001:db8::11\n", "");
        let d = read(Component::KubeApiserver, m.as_bytes()).unwrap();
        assert_eq!(d.probe.as_ref().unwrap().target, sa("[2001:db8::11]:6443"));
    }

    #[test]
    fn ipv6_controller_manager_and_scheduler() {
        for (c, port) in [
            (Component::KubeControllerManager, 10257),
            (Component::KubeScheduler, 10259),
        ] {
            for bind in ["127.0.0.1", "::1"] {
                let d = read(c, &v6_go_component(c, bind, port)).unwrap();
                assert_eq!(
                    d.probe.as_ref().unwrap().target,
                    SocketAddr::new(ip(bind), port),
                    "{c} {bind}"
                );
                assert_eq!(d.probe.as_ref().unwrap().scheme, Scheme::Https);
                assert_eq!(d.probe.as_ref().unwrap().path, "/healthz");
                assert_eq!(d.server().unwrap().bind_address, Some(ip(bind)));
            }
        }
        let d = read(
            Component::KubeScheduler,
            &v6_go_component(Component::KubeScheduler, "::1", 10259),
        )
        .unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://[::1]:10259/healthz"
        );
    }

    // ---- dual-stack, addresses of the node, named ports, custom files ----

    #[test]
    fn dual_stack_etcd_prefers_loopback_then_the_hosts_addresses() {
        let both = pod(
            Component::Etcd,
            &["--listen-client-urls=https://10.0.0.11:2379,https://[2001:db8::11]:2379,https://[::1]:2379,https://127.0.0.1:2379,https://localhost:2379"],
            "",
        );
        let e = read(Component::Etcd, &both).unwrap().flags;
        let Flags::Etcd(e) = e else { panic!() };
        assert_eq!(etcd_client_target(&e, &[]), Ok(sa("127.0.0.1:2379")));

        let order = |urls: &str, host: &[IpAddr]| {
            let m = pod(
                Component::Etcd,
                &[&format!("--listen-client-urls={urls}")],
                "",
            );
            let d = read(Component::Etcd, &m).unwrap();
            etcd_client_target(d.etcd().unwrap(), host)
        };
        assert_eq!(
            order("https://localhost:2379,https://[::1]:32379", &[]),
            Ok(sa("[::1]:32379")),
            "[::1] before localhost"
        );
        assert_eq!(
            order("https://10.0.0.11:2379,https://localhost:2379", &[]),
            Ok(sa("127.0.0.1:2379")),
            "localhost is loopback"
        );
        assert_eq!(
            order("https://[::]:2379", &[]),
            Ok(sa("[::1]:2379")),
            "unspecified: loopback of its family"
        );
        assert_eq!(
            order(
                "https://[2001:db8::11]:2379,https://10.0.0.11:2379",
                &[ip("10.0.0.11"), ip("2001:db8::11")]
            ),
            Ok(sa("[2001:db8::11]:2379")),
            "the first of this host's"
        );
        assert_eq!(
            order(
                "https://[2001:db8::11]:2379,https://10.0.0.11:2379",
                &[ip("10.0.0.11")]
            ),
            Ok(sa("10.0.0.11:2379"))
        );
        assert_eq!(
            order(
                "http://127.0.0.1:2379,https://10.0.0.12:2379",
                &[ip("10.0.0.11")]
            ),
            Err(DeclError::NoClientUrl {
                urls: "http://127.0.0.1:2379,https://10.0.0.12:2379".into()
            }),
            "plain http is not etcd's TLS port; another host's address is not ours"
        );
        let none = read(Component::Etcd, &pod(Component::Etcd, &[], "")).unwrap();
        let err = etcd_client_target(none.etcd().unwrap(), &[ip("10.0.0.11")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "etcd --listen-client-urls=(none) has no https URL on loopback or on an address of this host: etcd's own questions have no address (no port is guessed)"
        );
        assert!(!err.to_string().contains("2379"));
    }

    #[test]
    fn dual_stack_peer_and_unspecified_peer() {
        let m = pod(
            Component::Etcd,
            &["--listen-peer-urls=https://10.0.0.11:2380,https://[2001:db8::11]:2380"],
            "",
        );
        let d = read(Component::Etcd, &m).unwrap();
        let e = d.etcd().unwrap();
        assert_eq!(
            etcd_peer_target(e, &[ip("2001:db8::11")]),
            Ok(sa("[2001:db8::11]:2380"))
        );
        assert_eq!(
            etcd_peer_target(e, &[ip("10.0.0.11"), ip("2001:db8::11")]),
            Ok(sa("10.0.0.11:2380"))
        );
        for (urls, want) in [
            ("https://0.0.0.0:2380", "127.0.0.1:2380"),
            ("https://[::]:2380", "[::1]:2380"),
            (
                "http://10.0.0.11:2381,https://localhost:2380",
                "127.0.0.1:2380",
            ),
        ] {
            let m = pod(
                Component::Etcd,
                &[&format!("--listen-peer-urls={urls}")],
                "",
            );
            let d = read(Component::Etcd, &m).unwrap();
            assert_eq!(
                etcd_peer_target(d.etcd().unwrap(), &[]),
                Ok(sa(want)),
                "{urls}"
            );
        }
        let http = pod(
            Component::Etcd,
            &["--listen-peer-urls=http://10.0.0.11:2380"],
            "",
        );
        let d = read(Component::Etcd, &http).unwrap();
        assert_eq!(
            etcd_peer_target(d.etcd().unwrap(), &[ip("10.0.0.11")]),
            Err(DeclError::NoPeerUrl {
                urls: "http://10.0.0.11:2380".into()
            })
        );
    }

    #[test]
    fn bind_address_on_the_nodes_address_and_unspecified() {
        // No probe host: the bind address.
        let probe = probe_yaml("livenessProbe", None, "10257", "/healthz", "HTTPS");
        let m = pod(
            Component::KubeControllerManager,
            &["--bind-address=10.0.0.11"],
            &probe,
        );
        let d = read(Component::KubeControllerManager, &m).unwrap();
        assert_eq!(d.probe.as_ref().unwrap().target, sa("10.0.0.11:10257"));
        assert_eq!(d.probe.as_ref().unwrap().source, ProbeSource::Liveness);
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(10));
        // Unspecified: loopback of its family.
        for (bind, want) in [("0.0.0.0", "127.0.0.1:10257"), ("::", "[::1]:10257")] {
            let m = pod(
                Component::KubeControllerManager,
                &[&format!("--bind-address={bind}")],
                &probe,
            );
            let d = read(Component::KubeControllerManager, &m).unwrap();
            assert_eq!(d.probe.as_ref().unwrap().target, sa(want), "{bind}");
        }
        // A probe host that is unspecified is asked on loopback too.
        let m = pod(
            Component::KubeScheduler,
            &[],
            &probe_yaml("livenessProbe", Some("'::'"), "10259", "/healthz", "HTTPS"),
        );
        assert_eq!(
            read(Component::KubeScheduler, &m)
                .unwrap()
                .probe
                .as_ref()
                .unwrap()
                .target,
            sa("[::1]:10259")
        );
        // The apiserver: --bind-address before --advertise-address.
        let probe = probe_yaml("readinessProbe", None, "6443", "/readyz", "HTTPS");
        let m = pod(
            Component::KubeApiserver,
            &["--advertise-address=10.0.0.11", "--bind-address=10.0.0.12"],
            &probe,
        );
        assert_eq!(
            read(Component::KubeApiserver, &m)
                .unwrap()
                .probe
                .as_ref()
                .unwrap()
                .target,
            sa("10.0.0.12:6443")
        );
        let m = pod(
            Component::KubeApiserver,
            &["--advertise-address=10.0.0.11", "--bind-address=::"],
            &probe,
        );
        assert_eq!(
            read(Component::KubeApiserver, &m)
                .unwrap()
                .probe
                .as_ref()
                .unwrap()
                .target,
            sa("[::1]:6443")
        );
    }

    #[test]
    fn no_probe_at_all_uses_the_flags_and_defaults() {
        let m = pod(
            Component::KubeApiserver,
            &["--advertise-address=10.0.0.11", "--secure-port", "7443"],
            "",
        );
        let d = read(Component::KubeApiserver, &m).unwrap();
        assert_eq!(
            d.probe.clone().unwrap(),
            Probe {
                source: ProbeSource::Default,
                target: sa("10.0.0.11:7443"),
                path: "/readyz".into(),
                scheme: Scheme::Https,
            }
        );
        assert_eq!(d.start_allowance.unwrap(), Duration::ZERO);
        let d = read(
            Component::KubeApiserver,
            &pod(Component::KubeApiserver, &[], ""),
        )
        .unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://127.0.0.1:6443/readyz"
        );
        let d = read(
            Component::KubeControllerManager,
            &pod(
                Component::KubeControllerManager,
                &["--bind-address=::1"],
                "",
            ),
        )
        .unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://[::1]:10257/healthz"
        );
        let d = read(
            Component::KubeScheduler,
            &pod(Component::KubeScheduler, &["--secure-port=0x2844"], ""),
        )
        .unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://127.0.0.1:10308/healthz",
            "pflag ints"
        );
        let d = read(
            Component::Etcd,
            &bare_pod(
                Component::Etcd,
                &["--listen-client-urls=https://[2001:db8::11]:2379,https://[::1]:32379"],
                "",
            ),
        )
        .unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://[::1]:32379/health"
        );
        let e = read(
            Component::Etcd,
            &bare_pod(
                Component::Etcd,
                &["--listen-client-urls=https://10.0.0.11:2379"],
                "",
            ),
        )
        .unwrap()
        .probe
        .unwrap_err();
        assert_eq!(
            e,
            DeclError::EtcdNoProbe {
                urls: "https://10.0.0.11:2379".into()
            }
        );
    }

    #[test]
    fn etcd_probe_without_host_follows_the_listen_urls() {
        let probe = probe_yaml("livenessProbe", None, "2381", "/health", "HTTP");
        let m = pod(
            Component::Etcd,
            &["--listen-metrics-urls=http://[::1]:2381,http://10.0.0.11:2381"],
            &probe,
        );
        let d = read(Component::Etcd, &m).unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().target,
            sa("[::1]:2381"),
            "the first metrics URL"
        );
        let m = pod(
            Component::Etcd,
            &["--listen-metrics-urls=http://[::1]:9999"],
            &probe,
        );
        let d = read(Component::Etcd, &m).unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().target,
            sa("127.0.0.1:2381"),
            "no URL on the port"
        );
    }

    #[test]
    fn start_allowance_defaults() {
        // A startupProbe with Kubernetes' defaults: 0 + 3 x 10.
        let m = pod(
            Component::KubeScheduler,
            &[],
            "    startupProbe:\n      httpGet:\n        port: 10259\n        scheme: HTTPS\n",
        );
        let d = read(Component::KubeScheduler, &m).unwrap();
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(30));
        assert_eq!(d.probe.as_ref().unwrap().path, "/", "default path");
        // Zero period and threshold are defaulted as the API server does.
        let m = pod(
            Component::KubeScheduler,
            &[],
            "    startupProbe:\n      initialDelaySeconds: 5\n      periodSeconds: 0\n      failureThreshold: 0\n      httpGet:\n        port: 10259\n        scheme: HTTPS\n",
        );
        assert_eq!(
            read(Component::KubeScheduler, &m)
                .unwrap()
                .start_allowance
                .unwrap(),
            Duration::from_secs(35)
        );
        // The startup allowance counts even when another probe is asked.
        let m = pod(
            Component::KubeScheduler,
            &[],
            &format!(
                "{}    startupProbe:\n      exec:\n        command: [true]\n      initialDelaySeconds: 7\n      failureThreshold: 2\n      periodSeconds: 5\n",
                probe_yaml("readinessProbe", Some("127.0.0.1"), "10259", "/healthz", "HTTPS")
            ),
        );
        let d = read(Component::KubeScheduler, &m).unwrap();
        assert_eq!(d.probe.as_ref().unwrap().source, ProbeSource::Readiness);
        assert_eq!(d.start_allowance.unwrap(), Duration::from_secs(17));
        // An exec readinessProbe is skipped for the httpGet one after it.
        let m = pod(
            Component::KubeScheduler,
            &[],
            &format!(
                "    readinessProbe:\n      exec:\n        command: [true]\n{}",
                probe_yaml(
                    "livenessProbe",
                    Some("127.0.0.1"),
                    "10259",
                    "/livez",
                    "HTTPS"
                )
            ),
        );
        let d = read(Component::KubeScheduler, &m).unwrap();
        assert_eq!(d.probe.as_ref().unwrap().source, ProbeSource::Liveness);
        assert_eq!(d.probe.as_ref().unwrap().path, "/livez");
    }

    #[test]
    fn named_ports_as_kubeadm_1_34_writes_them() {
        let m = pod(
            Component::KubeApiserver,
            &["--advertise-address=10.0.0.11"],
            &format!(
                "{}    ports:\n    - containerPort: 6443\n      name: probe-port\n      protocol: TCP\n",
                probe_yaml("readinessProbe", Some("10.0.0.11"), "probe-port", "/readyz", "HTTPS")
            ),
        );
        let d = read(Component::KubeApiserver, &m).unwrap();
        assert_eq!(
            d.probe.as_ref().unwrap().url(),
            "https://10.0.0.11:6443/readyz"
        );
        let m = pod(
            Component::Etcd,
            &["--listen-metrics-urls=http://127.0.0.1:2381"],
            &format!(
                "{}    ports:\n    - containerPort: 2381\n      name: probe-port\n      protocol: TCP\n",
                probe_yaml("readinessProbe", Some("127.0.0.1"), "probe-port", "/readyz", "HTTP")
            ),
        );
        assert_eq!(
            read(Component::Etcd, &m)
                .unwrap()
                .probe
                .as_ref()
                .unwrap()
                .url(),
            "http://127.0.0.1:2381/readyz"
        );
    }

    #[test]
    fn serving_files_custom_and_leaves() {
        let m = pod(
            Component::KubeApiserver,
            &[
                "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
                "--tls-cert-file=/etc/ssl/custom/apiserver.pem",
            ],
            "",
        );
        let d = read(Component::KubeApiserver, &m).unwrap();
        let f = d.server().unwrap().tls_cert_file.clone().unwrap();
        assert_eq!(f, "/etc/ssl/custom/apiserver.pem", "the last wins");
        assert!(kubeadm_leaf(&f).is_none());
        assert_eq!(
            kubeadm_leaf("/etc/kubernetes/pki/etcd/server.crt").map(|l| l.name),
            Some("etcd-server")
        );
        assert_eq!(
            kubeadm_leaf("/etc/kubernetes//pki/./etcd/peer.crt").map(|l| l.name),
            Some("etcd-peer")
        );
        for not in [
            "etc/kubernetes/pki/apiserver.crt",
            "/etc/kubernetes/pki/ca.crt",
            "/etc/kubernetes/pki/apiserver.key",
            "/etc/kubernetes/admin.conf",
            "/etc/kubernetes/pki/x/../apiserver.crt",
            "/etc/kubernetes/ssl/apiserver.crt",
        ] {
            assert!(kubeadm_leaf(not).is_none(), "{not}");
        }
        let m = pod(
            Component::Etcd,
            &[
                "-cert-file",
                "/etc/ssl/etcd/server.pem",
                "--peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt",
            ],
            "",
        );
        let d = read(Component::Etcd, &m).unwrap();
        let e = d.etcd().unwrap();
        assert_eq!(e.cert_file.as_deref(), Some("/etc/ssl/etcd/server.pem"));
        assert!(kubeadm_leaf(e.cert_file.as_deref().unwrap()).is_none());
        assert!(kubeadm_leaf(e.peer_cert_file.as_deref().unwrap()).is_some());
    }

    #[test]
    fn target_and_url_host_formatting() {
        assert_eq!(sa("[::1]:2379").to_string(), "[::1]:2379");
        assert_eq!(sa("127.0.0.1:2379").to_string(), "127.0.0.1:2379");
        assert_eq!(url_host(ip("2001:db8::11")), "[2001:db8::11]");
        assert_eq!(url_host(ip("10.0.0.11")), "10.0.0.11");
        assert_eq!(loopback_of(ip("2001:db8::11")), ip("::1"));
        assert_eq!(loopback_of(ip("10.0.0.11")), ip("127.0.0.1"));
        let u = EtcdUrl {
            scheme: Scheme::Https,
            host: UrlHost::Ip(ip("::1")),
            port: 2379,
        };
        assert_eq!(u.to_string(), "https://[::1]:2379");
    }

    /// SPEC 12 (v1.3): etcd's own questions go to its loopback client URL
    /// of either family (127.0.0.1, then [::1], then localhost), else an
    /// unspecified one on its family's loopback, else an address of this
    /// host; never a guessed port, never another machine, never a name.
    /// (Moved here from `node::manifests` with the reader it tested.)
    #[test]
    fn etcd_is_asked_on_its_loopback_client_url_of_either_family() {
        let host = ["10.0.0.11".parse::<IpAddr>().unwrap()];
        let addr = |urls: &str| {
            let d = read(
                Component::Etcd,
                format!(
                    "spec:\n  containers:\n  - name: etcd\n    command:\n    - etcd\n    - --listen-client-urls={urls}\n"
                )
                .as_bytes(),
            )?;
            etcd_client_target(d.etcd().unwrap(), &host)
        };
        let ok = |urls: &str| addr(urls).unwrap().to_string();
        assert_eq!(
            ok("https://127.0.0.1:2379,https://10.0.0.11:2379"),
            "127.0.0.1:2379"
        );
        assert_eq!(
            ok("https://10.0.0.11:2379,https://127.0.0.1:32379"),
            "127.0.0.1:32379"
        );
        // kubeadm on an IPv6 single-stack node.
        assert_eq!(
            ok("https://[::1]:2379,https://[fd00::11]:2379"),
            "[::1]:2379"
        );
        assert_eq!(
            ok("https://[::1]:2379,https://127.0.0.1:2379"),
            "127.0.0.1:2379"
        );
        assert_eq!(ok("https://localhost:2379"), "127.0.0.1:2379");
        assert_eq!(ok("https://[::]:2379"), "[::1]:2379");
        assert_eq!(ok("https://0.0.0.0:2379"), "127.0.0.1:2379");
        assert_eq!(ok("https://10.0.0.11:2379"), "10.0.0.11:2379");
        assert_eq!(ok("http://127.0.0.1:2379,https://[::1]:2379"), "[::1]:2379");
        for none in [
            "https://10.0.0.12:2379",
            "http://127.0.0.1:2379",
            "unix://etcd.sock:0",
        ] {
            let e = addr(none).unwrap_err();
            assert!(matches!(e, DeclError::NoClientUrl { .. }), "{none}: {e}");
        }
        // What etcd itself would refuse, or the runbook cannot ask
        // without a guess: named errors.
        for bad in [
            "https://::1:2379",
            "https://127.0.0.1",
            "https://[::1]",
            "https://[::1]:2379/",
            "https://[fe80::1%25eth0]:2379",
            "https://etcd.example:2379",
        ] {
            assert!(addr(bad).is_err(), "{bad}");
        }
    }

    // ---- bad input: each a named error, never a guess ----

    /// The first error: reading the manifest, else its probe.
    fn err(component: Component, command: &[&str], rest: &str) -> DeclError {
        match read(component, &pod(component, command, rest)) {
            Err(e) => e,
            Ok(d) => d.probe.unwrap_err(),
        }
    }

    #[test]
    fn a_named_port_that_does_not_exist() {
        let e = err(
            Component::KubeApiserver,
            &[],
            &format!(
                "{}    ports:\n    - containerPort: 6443\n      name: https\n",
                probe_yaml(
                    "readinessProbe",
                    Some("10.0.0.11"),
                    "probe-port",
                    "/readyz",
                    "HTTPS"
                )
            ),
        );
        assert_eq!(
            e,
            DeclError::NamedPortNotFound {
                component: Component::KubeApiserver,
                probe: ProbeSource::Readiness,
                name: "probe-port".into(),
                known: vec!["https".into()],
            }
        );
        assert_eq!(
            e.to_string(),
            "kube-apiserver readinessProbe.httpGet.port names the port \"probe-port\", which the container does not declare (its named ports: https)"
        );
        let e = err(
            Component::KubeScheduler,
            &[],
            &probe_yaml("livenessProbe", None, "\"10259\"", "/healthz", "HTTPS"),
        );
        assert!(
            matches!(e, DeclError::NamedPortNotFound { ref known, .. } if known.is_empty()),
            "a quoted number is a name: {e}"
        );
    }

    #[test]
    fn a_probe_host_that_is_a_name() {
        for host in ["localhost", "cp-1.example.com", "'[::1]'"] {
            let e = err(
                Component::KubeControllerManager,
                &[],
                &probe_yaml("livenessProbe", Some(host), "10257", "/healthz", "HTTPS"),
            );
            assert!(matches!(e, DeclError::NotAnIp { .. }), "{host}: {e}");
        }
        let e = err(
            Component::KubeControllerManager,
            &[],
            &probe_yaml(
                "livenessProbe",
                Some("localhost"),
                "10257",
                "/healthz",
                "HTTPS",
            ),
        );
        assert_eq!(
            e.to_string(),
            "kube-controller-manager livenessProbe.httpGet.host is \"localhost\", not an IP address (names are not resolved)"
        );
        let e = err(Component::KubeApiserver, &["--advertise-address=cp-1"], "");
        assert!(matches!(e, DeclError::NotAnIp { ref what, .. } if what == "--advertise-address"));
    }

    #[test]
    fn zone_indexes() {
        let e = err(
            Component::KubeControllerManager,
            &[],
            &probe_yaml(
                "livenessProbe",
                Some("fe80::1%eth0"),
                "10257",
                "/healthz",
                "HTTPS",
            ),
        );
        assert!(matches!(e, DeclError::Zone { .. }), "{e}");
        let e = err(
            Component::KubeScheduler,
            &["--bind-address=fe80::1%eth0"],
            "",
        );
        assert_eq!(
            e.to_string(),
            "kube-scheduler --bind-address is \"fe80::1%eth0\", an address with a zone index, which is not supported"
        );
        let e = err(
            Component::Etcd,
            &["--listen-client-urls=https://[fe80::1%25eth0]:2379"],
            "",
        );
        assert!(matches!(e, DeclError::Zone { .. }), "{e}");
    }

    #[test]
    fn ipv6_url_hosts_without_brackets() {
        for url in [
            "https://::1:2379",
            "https://2001:db8::11:2379",
            "https://::1",
        ] {
            let e = err(
                Component::Etcd,
                &[&format!(
                    "--listen-client-urls=https://127.0.0.1:2379,{url}"
                )],
                "",
            );
            assert_eq!(
                e,
                DeclError::UnbracketedIpv6 {
                    flag: "--listen-client-urls",
                    url: url.into()
                }
            );
        }
        assert_eq!(
            err(Component::Etcd, &["--listen-peer-urls=https://::1:2380"], "").to_string(),
            "etcd --listen-peer-urls has an IPv6 address without brackets: https://::1:2380 (write https://[addr]:port)"
        );
    }

    #[test]
    fn plain_http_on_tls_ports() {
        let e = err(
            Component::KubeApiserver,
            &[],
            &probe_yaml(
                "readinessProbe",
                Some("10.0.0.11"),
                "6443",
                "/readyz",
                "HTTP",
            ),
        );
        assert_eq!(
            e.to_string(),
            "kube-apiserver readinessProbe asks plain HTTP on port 6443, which serves TLS only"
        );
        // A probe without a scheme is HTTP, as Kubernetes defaults it.
        let e = err(
            Component::KubeApiserver,
            &[],
            "    readinessProbe:\n      httpGet:\n        port: 6443\n        path: /readyz\n",
        );
        assert!(matches!(e, DeclError::PlainHttp { port: 6443, .. }), "{e}");
        let e = err(
            Component::Etcd,
            &["--listen-client-urls=https://127.0.0.1:2379"],
            &probe_yaml(
                "livenessProbe",
                Some("127.0.0.1"),
                "2379",
                "/health",
                "HTTP",
            ),
        );
        assert_eq!(
            e,
            DeclError::PlainHttp {
                component: Component::Etcd,
                probe: ProbeSource::Liveness,
                port: 2379
            }
        );
        // The metrics port over plain HTTP is what kubeadm writes.
        assert!(read(
            Component::Etcd,
            &pod(
                Component::Etcd,
                &["--listen-client-urls=https://127.0.0.1:2379"],
                &probe_yaml(
                    "livenessProbe",
                    Some("127.0.0.1"),
                    "2381",
                    "/health",
                    "HTTP"
                ),
            )
        )
        .is_ok());
    }

    #[test]
    fn bad_ports() {
        for port in ["0", "65536", "-1", "6443.5"] {
            let e = err(
                Component::KubeApiserver,
                &[],
                &probe_yaml(
                    "readinessProbe",
                    Some("10.0.0.11"),
                    port,
                    "/readyz",
                    "HTTPS",
                ),
            );
            assert!(matches!(e, DeclError::BadPort { .. }), "{port}: {e}");
        }
        for v in ["0", "65536", "x", ""] {
            let e = err(
                Component::KubeApiserver,
                &[&format!("--secure-port={v}")],
                "",
            );
            assert_eq!(
                e,
                DeclError::BadPort {
                    component: Component::KubeApiserver,
                    what: "--secure-port".into(),
                    value: v.into()
                }
            );
        }
        assert_eq!(
            err(
                Component::KubeControllerManager,
                &["--secure-port=70000"],
                ""
            )
            .to_string(),
            "kube-controller-manager --secure-port: 70000 is not a port (1 to 65535)"
        );
        for url in [
            "https://127.0.0.1:0",
            "https://127.0.0.1:65536",
            "https://127.0.0.1:23x9",
            "https://[::1]:-1",
        ] {
            let e = err(
                Component::Etcd,
                &[&format!("--listen-client-urls={url}")],
                "",
            );
            assert!(matches!(e, DeclError::BadPort { .. }), "{url}: {e}");
        }
        let e = err(
            Component::KubeApiserver,
            &[],
            &format!(
                "{}    ports:\n    - containerPort: 0\n      name: probe-port\n",
                probe_yaml(
                    "readinessProbe",
                    Some("10.0.0.11"),
                    "probe-port",
                    "/readyz",
                    "HTTPS"
                )
            ),
        );
        assert!(matches!(e, DeclError::BadPort { .. }), "{e}");
    }

    #[test]
    fn urls_without_a_port_or_of_another_shape() {
        for url in [
            "https://127.0.0.1",
            "https://[::1]",
            "https://localhost",
            "https://127.0.0.1:",
        ] {
            let e = err(
                Component::Etcd,
                &[&format!("--listen-client-urls={url}")],
                "",
            );
            assert_eq!(
                e,
                DeclError::UrlNoPort {
                    flag: "--listen-client-urls",
                    url: url.into()
                },
                "{url}"
            );
        }
        assert_eq!(
            err(Component::Etcd, &["--listen-client-urls=https://127.0.0.1"], "").to_string(),
            "etcd --listen-client-urls has a URL without a port: https://127.0.0.1 (etcd requires one; none is guessed)"
        );
        for url in [
            "https://127.0.0.1:2379/",
            "https://user@127.0.0.1:2379",
            "https://[::1]x:2379",
            "127.0.0.1:2379",
        ] {
            let e = err(
                Component::Etcd,
                &[&format!("--listen-client-urls={url}")],
                "",
            );
            assert!(matches!(e, DeclError::UrlShape { .. }), "{url}: {e}");
        }
        for url in ["tcp://127.0.0.1:2379", ""] {
            let e = err(
                Component::Etcd,
                &[&format!("--listen-client-urls={url}")],
                "",
            );
            assert!(matches!(e, DeclError::UrlScheme { .. }), "{url:?}: {e}");
        }
        // A name is bound by no listen URL, but may be advertised.
        let e = err(
            Component::Etcd,
            &["--listen-client-urls=https://etcd.example.com:2379"],
            "",
        );
        assert!(matches!(e, DeclError::NotAnIp { .. }), "{e}");
        let d = read(
            Component::Etcd,
            &pod(
                Component::Etcd,
                &[
                    "--advertise-client-urls=https://etcd.example.com:2379",
                    "--listen-client-urls=unix://localhost:4001,https://127.0.0.1:2379",
                ],
                "",
            ),
        )
        .unwrap();
        let e = d.etcd().unwrap();
        assert_eq!(
            e.advertise_client_urls[0].host,
            UrlHost::Name("etcd.example.com".into())
        );
        assert_eq!(urls_text(&e.listen_client_urls), "https://127.0.0.1:2379");
    }

    #[test]
    fn not_yaml_no_containers_and_bad_shapes() {
        let e = read(Component::Etcd, b"\xff\xfe: : [").unwrap_err();
        assert!(matches!(e, DeclError::Yaml { .. }), "{e}");
        assert!(e.to_string().starts_with("etcd manifest "), "{e}");
        for m in [
            &b"apiVersion: v1\nkind: Pod\n"[..],
            b"spec:\n  containers: []\n",
            b"spec:\n  containers: x\n",
            b"",
        ] {
            assert_eq!(
                read(Component::KubeScheduler, m),
                Err(DeclError::NoContainers(Component::KubeScheduler))
            );
        }
        assert_eq!(
            DeclError::NoContainers(Component::KubeScheduler).to_string(),
            "kube-scheduler manifest has no spec.containers"
        );
        let bomb = format!(
            "a: &a [{}]\nb: [{}]\n",
            ["x"; 16_000].join(","),
            ["*a"; 6000].join(",")
        );
        let e = read(Component::Etcd, bomb.as_bytes()).unwrap_err();
        assert!(
            matches!(e, DeclError::Yaml { ref yaml, .. } if yaml.is_bound()),
            "bounded: {e}"
        );
        let e = read(
            Component::KubeApiserver,
            b"spec:\n  containers:\n  - command: [kube-apiserver, --secure-port, 6444]\n",
        )
        .unwrap_err();
        assert!(matches!(e, DeclError::NotStringItem { .. }), "{e}");
        let e = err(
            Component::KubeScheduler,
            &[],
            "    livenessProbe:\n      httpGet:\n        port: 10259\n        scheme: https\n",
        );
        assert!(matches!(e, DeclError::ProbeField { .. }), "{e}");
        let e = err(
            Component::KubeScheduler,
            &[],
            "    startupProbe:\n      periodSeconds: -1\n      httpGet:\n        port: 10259\n        scheme: HTTPS\n",
        );
        assert_eq!(
            e.to_string(),
            "kube-scheduler startupProbe.periodSeconds is -1, not a whole number from 0 to 2147483647"
        );
        let e = err(Component::KubeScheduler, &[], "    livenessProbe: yes\n");
        assert!(matches!(e, DeclError::NotMapping { .. }), "{e}");
        let e = err(Component::Etcd, &["--cert-file=pki/etcd/server.crt"], "");
        assert_eq!(
            e.to_string(),
            "etcd --cert-file=pki/etcd/server.crt is not an absolute path without '..'"
        );
        let e = err(Component::KubeApiserver, &["--secure-port"], "");
        assert!(matches!(e, DeclError::Flag { .. }), "{e}");
    }

    #[test]
    fn the_component_container_among_sidecars() {
        let m = b"spec:\n  containers:\n  - name: sidecar\n    command: [x, --secure-port=1]\n  - name: kube-apiserver\n    command: [kube-apiserver, --secure-port=7443]\n";
        let d = read(Component::KubeApiserver, m).unwrap();
        assert_eq!(d.server().unwrap().secure_port, 7443);
        let args_only =
            b"spec:\n  containers:\n  - name: kube-apiserver\n    args: [--secure-port=7444]\n";
        assert_eq!(
            read(Component::KubeApiserver, args_only)
                .unwrap()
                .server()
                .unwrap()
                .secure_port,
            7444
        );
    }
}
