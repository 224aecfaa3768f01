//! Where the four static pod manifests are (active, runbook staging, agent
//! staging), what else sits in the staging directories, and stray files in
//! the manifests directory that kubelet would load as extra pods.

use crate::contract;
use crate::node::fsx::{vet_stat, Dir, FsError, Kind, Root, Trust, NODE_FILE_MAX};
use crate::node::paths::{AGENT_STAGING_DIR, MANIFESTS_DIR, STAGING_DIR};
use crate::rules::component::Component;
use crate::rules::outcome::ManifestLocation;
use crate::rules::progress::Reason;
use std::collections::BTreeMap;

/// One component's manifest, a staging directory, a stray: the contract's views.
pub use crate::contract::{ManifestView, StagingView, Stray};

pub fn location(active: bool, staged: bool) -> ManifestLocation {
    match (active, staged) {
        (true, false) => ManifestLocation::Active,
        (false, true) => ManifestLocation::Staged,
        (true, true) => ManifestLocation::Both,
        (false, false) => ManifestLocation::Missing,
    }
}

/// The location a view shows: staged in either staging directory counts.
fn view_location(active: bool, staged: bool) -> contract::ManifestLocation {
    match (active, staged) {
        (true, false) => contract::ManifestLocation::Active,
        (false, true) => contract::ManifestLocation::Staged,
        (true, true) => contract::ManifestLocation::Both,
        (false, false) => contract::ManifestLocation::Missing,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestsReport {
    pub manifests: BTreeMap<Component, ManifestView>,
    pub runbook_staging: StagingView,
    pub agent_staging: StagingView,
    pub strays: Vec<Stray>,
    /// Files in `manifests/` (the four and the strays) over a bound of the
    /// YAML reader or its size cap: refused as hostile, each message
    /// naming its file (SPEC 10, "Bounded reads"). Empty from [`placement`].
    pub hostile: Vec<String>,
    /// The manifests directory itself could not be read.
    pub manifests_dir_error: Option<String>,
    /// External etcd (SPEC 12, v1.3): no etcd manifest anywhere, and
    /// kube-apiserver's `--etcd-servers` (these) names no address of this
    /// host. Such a node is refused as one verdict, exit 1: its etcd pod
    /// never existed.
    pub external_etcd: Option<String>,
}

/// The one verdict on a node with external etcd (SPEC 12, v1.3).
pub const EXTERNAL_ETCD: &str = "external etcd: this runbook renews stacked-etcd nodes only";

impl ManifestsReport {
    /// Every one of the four is in `manifests/` (SPEC 7, v1.1: "active"
    /// means present there, whatever else holds a copy: a staging conflict
    /// with all four active exits 1, not 4).
    pub fn all_active(&self) -> bool {
        self.manifests
            .iter()
            .filter(|(c, _)| !(**c == Component::Etcd && self.external_etcd.is_some()))
            .all(|(_, m)| m.active && m.error.is_none())
    }

    /// The one verdict on a node with external etcd, with the servers it
    /// names (SPEC 12, v1.3).
    pub fn external_etcd_verdict(&self) -> Option<String> {
        self.external_etcd
            .as_ref()
            .map(|servers| format!("{EXTERNAL_ETCD} (kube-apiserver --etcd-servers={servers})"))
    }
    pub fn receipt_locations(&self) -> BTreeMap<Component, ManifestLocation> {
        self.manifests
            .iter()
            // A receipt records only the runbook's own staging.
            .map(|(c, m)| (*c, location(m.active, m.runbook_staged)))
            .collect()
    }

    /// The four manifests as the read-only modes print them.
    pub fn views(&self) -> contract::ManifestViews {
        let view = |c: Component| {
            self.manifests.get(&c).cloned().unwrap_or(ManifestView {
                location: contract::ManifestLocation::Missing,
                active: false,
                runbook_staged: false,
                agent_staged: false,
                error: None,
            })
        };
        contract::ManifestViews {
            etcd: view(Component::Etcd),
            kube_apiserver: view(Component::KubeApiserver),
            kube_controller_manager: view(Component::KubeControllerManager),
            kube_scheduler: view(Component::KubeScheduler),
        }
    }

    /// Both staging directories as the read-only modes print them.
    pub fn staging(&self) -> contract::StagingViews {
        contract::StagingViews {
            runbook: self.runbook_staging.clone(),
            agent: self.agent_staging.clone(),
        }
    }
}

/// Not a kubeadm control-plane node (a worker, or the wrong `--root`):
/// none of the four manifests is anywhere (active or staged, nothing
/// refused) and there is no cluster CA key (`pki/ca.key`), which every
/// kubeadm control-plane node has and no worker does. A control-plane
/// node that lost its four manifests still has its CA key: its pods are
/// down, and it is told so.
pub fn not_a_control_plane(root: &Root, m: &ManifestsReport) -> Option<String> {
    let none_anywhere = m
        .manifests
        .values()
        .all(|v| !v.active && !v.runbook_staged && !v.agent_staged && v.error.is_none());
    let ca_key = format!("{}/ca.key", crate::node::paths::PKI_DIR);
    let no_ca_key = matches!(
        root.open_parent(&ca_key).and_then(|p| match p {
            Some((d, name)) => d.stat_entry(name),
            None => Ok(None),
        }),
        Ok(None)
    );
    (none_anywhere && no_ca_key).then(|| {
        format!(
            "not a kubeadm control-plane node: none of the four static pod manifests is anywhere and {} does not exist (is --root right?)",
            crate::node::paths::node(&ca_key)
        )
    })
}

/// A node the runbook does not renew, as its one verdict (exit 1, never
/// ACTION NEEDED for pods that never existed): not a control plane
/// ([`not_a_control_plane`]), or one with external etcd (SPEC 12, v1.3).
pub fn not_renewable(root: &Root, m: &ManifestsReport) -> Option<String> {
    not_a_control_plane(root, m).or_else(|| m.external_etcd_verdict())
}

/// Is `name` present in `dir` as an acceptable manifest? Err: refused.
pub fn manifest_present(dir: &Dir, name: &str) -> Result<bool, FsError> {
    match dir.stat_entry(name)? {
        None => Ok(false),
        Some(st) => {
            vet_stat(&dir.entry_path(name), &st, Kind::File, Trust::Strict)?;
            Ok(true)
        }
    }
}

fn staging_view(root: &Root, rel: &str) -> (Option<Dir>, StagingView) {
    let mut view = StagingView {
        path: crate::node::paths::node(rel),
        exists: false,
        entries: Vec::new(),
        unexpected: Vec::new(),
        error: None,
    };
    match root.open_dir(rel, Trust::Strict) {
        Ok(None) => (None, view),
        Ok(Some(d)) => {
            view.exists = true;
            match d.list() {
                Ok(names) => {
                    view.unexpected = names
                        .iter()
                        .filter(|n| !Component::ALL.iter().any(|c| c.manifest_file() == **n))
                        .cloned()
                        .collect();
                    view.entries = names;
                }
                Err(e) => view.error = Some(e.to_string()),
            }
            (Some(d), view)
        }
        Err(e) => {
            view.exists = true;
            view.error = Some(e.to_string());
            (None, view)
        }
    }
}

/// Look at the manifests directory and both staging directories, and read
/// what `manifests/` holds (within the bounds): the strays, and what is
/// hostile. The read-only modes and the renewal's preflight.
pub fn inspect(root: &Root) -> ManifestsReport {
    let mut m = placement(root);
    if let Ok(Some(dir)) = root.open_dir(MANIFESTS_DIR, Trust::Strict) {
        let (strays, hostile) = read_contents(&dir);
        m.strays = strays;
        m.hostile = hostile;
    }
    m
}

/// Where the four manifests are, and what the staging directories hold:
/// names and file types only, no file's contents read (`strays` and
/// `hostile` stay empty). Every put-back (a failed run's, the restore
/// guard's, the fencing check's, the preflight's) and every report of
/// where the manifests are uses this: a hostile file never keeps a pod
/// down (SPEC 10, "Bounded reads").
pub fn placement(root: &Root) -> ManifestsReport {
    let (manifests_dir, manifests_dir_error) = match root.open_dir(MANIFESTS_DIR, Trust::Strict) {
        Ok(Some(d)) => (Some(d), None),
        Ok(None) => (
            None,
            Some(format!(
                "{} does not exist",
                crate::node::paths::node(MANIFESTS_DIR)
            )),
        ),
        Err(e) => (None, Some(e.to_string())),
    };
    let (staging, runbook_staging) = staging_view(root, STAGING_DIR);
    let (agent, agent_staging) = staging_view(root, AGENT_STAGING_DIR);

    let mut manifests = BTreeMap::new();
    for c in Component::ALL {
        let name = c.manifest_file();
        let mut errors = Vec::new();
        let mut look = |dir: &Option<Dir>| -> bool {
            match dir {
                None => false,
                Some(d) => match manifest_present(d, &name) {
                    Ok(p) => p,
                    Err(e) => {
                        errors.push(e.to_string());
                        true
                    }
                },
            }
        };
        let active = look(&manifests_dir);
        let runbook_staged = look(&staging);
        let agent_staged = look(&agent);
        manifests.insert(
            c,
            ManifestView {
                location: view_location(active, runbook_staged || agent_staged),
                active,
                runbook_staged,
                agent_staged,
                error: if errors.is_empty() {
                    None
                } else {
                    Some(errors.join("; "))
                },
            },
        );
    }
    let etcd = &manifests[&Component::Etcd];
    let external_etcd =
        if !etcd.active && !etcd.runbook_staged && !etcd.agent_staged && etcd.error.is_none() {
            external_etcd(&[&manifests_dir, &staging, &agent])
        } else {
            None
        };
    ManifestsReport {
        manifests,
        runbook_staging,
        agent_staging,
        strays: Vec::new(),
        hostile: Vec::new(),
        manifests_dir_error,
        external_etcd,
    }
}

/// With no etcd manifest anywhere: kube-apiserver's `--etcd-servers`, from
/// the first of `dirs` that holds its manifest (read within the bounds;
/// one that cannot be read or parsed says nothing), when none of its URLs
/// names this host (`localhost`, loopback, an address of this host).
fn external_etcd(dirs: &[&Option<Dir>]) -> Option<String> {
    let name = Component::KubeApiserver.manifest_file();
    let bytes = dirs.iter().find_map(|d| {
        d.as_ref().and_then(|d| {
            d.read_file(&name, NODE_FILE_MAX, Trust::Strict)
                .ok()
                .flatten()
        })
    })?;
    let servers = container_flag(
        &bytes,
        "kube-apiserver",
        "--etcd-servers",
        crate::rules::flags::Syntax::Pflag,
    )
    .ok()
    .flatten()?;
    let elsewhere = |url: &str| match url_host(url) {
        Some(UrlHost::Localhost) => false,
        Some(UrlHost::Ip(ip)) => !crate::node::host::is_local(ip),
        Some(UrlHost::Name) => true,
        None => false,
    };
    let urls: Vec<&str> = servers
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect();
    (!urls.is_empty() && urls.iter().all(|u| elsewhere(u))).then_some(servers)
}

/// The host of a URL as `scheme://host[:port][/path]` writes it.
#[derive(Debug, PartialEq, Eq)]
enum UrlHost {
    Localhost,
    Ip(std::net::IpAddr),
    /// Another name: never this host's for the runbook (it resolves none).
    Name,
}

/// The host of `url`; None when it has no `scheme://` or no host.
fn url_host(url: &str) -> Option<UrlHost> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.0,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host.is_empty() {
        None
    } else if host.eq_ignore_ascii_case("localhost") {
        Some(UrlHost::Localhost)
    } else {
        Some(host.parse().map_or(UrlHost::Name, UrlHost::Ip))
    }
}

/// A file of `manifests/` refused as hostile: over the size cap or a bound
/// of the YAML reader, named.
fn hostile(path: &str, e: &crate::rules::yaml::YamlError) -> String {
    format!("{path} is {e}")
}

/// What the files of `manifests/` say, read within the bounds: the strays
/// ([`find_strays`]) and the files refused as hostile (the four manifests
/// and every file kubelet would load).
pub fn read_contents(dir: &Dir) -> (Vec<Stray>, Vec<String>) {
    let (strays, mut refused) = find_strays(dir);
    for c in Component::ALL {
        let name = c.manifest_file();
        match dir.read_file(&name, NODE_FILE_MAX, Trust::Strict) {
            Ok(Some(bytes)) => {
                if let Err(e) = crate::rules::yaml::parse_value(&bytes) {
                    if e.is_bound() {
                        refused.push(hostile(&dir.entry_path(&name), &e));
                    }
                }
            }
            Err(e @ FsError::TooLarge { .. }) => refused.push(format!("{e} (hostile input)")),
            // Refused by its placement (type, owner, mode), or absent.
            _ => {}
        }
    }
    (strays, refused)
}

/// Files kubelet would load (it skips dot files and subdirectories) that
/// duplicate one of the four components: by name (`etcd.yaml.bak`,
/// `kube-apiserver-old.yaml`) or by content (a pod labelled
/// `component: etcd`, or named like one). And those refused as hostile:
/// over the size cap or a bound of the YAML reader (a file that is merely
/// not a pod is not a stray).
pub fn find_strays(dir: &Dir) -> (Vec<Stray>, Vec<String>) {
    let Ok(names) = dir.list() else {
        return (Vec::new(), Vec::new());
    };
    let mut strays = Vec::new();
    let mut refused = Vec::new();
    for name in names {
        if name.starts_with('.') || Component::ALL.iter().any(|c| c.manifest_file() == name) {
            continue;
        }
        let path = dir.entry_path(&name);
        let kind = dir.kind_of(&name).ok().flatten();
        let by_name = Component::ALL.iter().find(|c| {
            name.strip_prefix(c.name()).is_some_and(|rest| {
                rest.starts_with('.') || rest.starts_with('-') || rest.starts_with('_')
            })
        });
        match kind {
            Some(Kind::Dir) | None => continue,
            Some(Kind::File) => {}
            Some(k) => {
                if let Some(c) = by_name {
                    strays.push(Stray {
                        path,
                        reason: format!("a {} named like the {c} manifest", k.as_str()),
                    });
                }
                continue;
            }
        }
        if let Some(c) = by_name {
            strays.push(Stray {
                path,
                reason: format!("named like the {c} manifest; kubelet loads it as a pod"),
            });
            continue;
        }
        match dir.read_file(&name, NODE_FILE_MAX, Trust::TypeOnly) {
            Ok(Some(bytes)) => match pod_component(&bytes) {
                Ok(Some(c)) => strays.push(Stray {
                    path,
                    reason: format!("a pod for {c}; kubelet would run a second {c}"),
                }),
                Err(e) if e.is_bound() => refused.push(hostile(&path, &e)),
                _ => {}
            },
            Err(e @ FsError::TooLarge { .. }) => refused.push(format!("{e} (hostile input)")),
            _ => {}
        }
    }
    (strays, refused)
}

/// The component a static pod manifest runs, by its `component` label or its
/// name (`etcd`, `etcd-<node>`), if it is one of the four. Err: not YAML
/// within the bounds.
pub fn pod_component(bytes: &[u8]) -> Result<Option<Component>, crate::rules::yaml::YamlError> {
    let doc = crate::rules::yaml::parse_value(bytes)?;
    Ok(component_of(&doc))
}

fn component_of(doc: &serde_json::Value) -> Option<Component> {
    let meta = doc.get("metadata")?;
    if let Some(label) = meta
        .get("labels")
        .and_then(|l| l.get("component"))
        .and_then(|v| v.as_str())
    {
        if let Some(c) = Component::from_name(label) {
            return Some(c);
        }
    }
    let name = meta.get("name")?.as_str()?;
    Component::from_name(name)
}

/// Why a static pod manifest's flags could not be read (`what`: the
/// container, `kube-apiserver`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("{what} manifest{}{yaml}", yaml_sep(.yaml))]
    Yaml {
        what: String,
        yaml: crate::rules::yaml::YamlError,
    },
    #[error("{0} manifest has no spec.containers")]
    NoContainers(String),
    #[error("{what} manifest: {key} is not a list")]
    NotList { what: String, key: &'static str },
    /// `item`: the JSON value as Rust debug-prints it.
    #[error("{what} manifest: a {key} item is not a string: {item}")]
    NotStringItem {
        what: String,
        key: &'static str,
        item: String,
    },
    #[error("{what} manifest: {flag}")]
    Flag {
        what: String,
        flag: crate::rules::flags::FlagError,
    },
    /// `what`: None for kube-apiserver.
    #[error("{}--secure-port={value} is not a port", .what.as_ref().map(|w| format!("{w} ")).unwrap_or_default())]
    NotPort { what: Option<String>, value: String },
    #[error("etcd {flag} has a bad port: {url}")]
    BadPort { flag: &'static str, url: String },
    #[error("etcd has no --listen-peer-urls: its peer port serves no certificate")]
    NoPeerUrls,
    #[error("etcd {flag} has a URL that is not IP:port (IPv6 in brackets): {url}")]
    NotIpPort { flag: &'static str, url: String },
    #[error("etcd --listen-peer-urls={0} has no https URL")]
    NoHttps(String),
    #[error("{what} {flag}={value} is not an IP address")]
    NotIp {
        what: String,
        flag: &'static str,
        value: String,
    },
    #[error("etcd has no --listen-client-urls: it serves no https client URL to ask")]
    NoClientUrls,
    #[error("etcd --listen-client-urls={0} has no https URL on this host (loopback or an address of this host) to ask")]
    NoLocalClientUrl(String),
}

/// A bound is told after a colon, a syntax error after a space.
fn yaml_sep(e: &crate::rules::yaml::YamlError) -> &'static str {
    if e.is_bound() {
        ": "
    } else {
        " "
    }
}

/// The value of `--<flag>` in the component's container of a static pod
/// manifest (the container named `what`, else the first), read from its
/// `command` and `args` as the component's flag library reads them
/// ([`crate::rules::flags`]: both forms, the last occurrence wins). The first
/// `command` item is the program itself.
pub fn container_flag(
    bytes: &[u8],
    what: &str,
    flag: &str,
    syntax: crate::rules::flags::Syntax,
) -> Result<Option<String>, ManifestError> {
    let doc = crate::rules::yaml::parse_value(bytes).map_err(|yaml| ManifestError::Yaml {
        what: what.to_string(),
        yaml,
    })?;
    let containers = doc
        .get("spec")
        .and_then(|s| s.get("containers"))
        .and_then(|c| c.as_array())
        .ok_or_else(|| ManifestError::NoContainers(what.to_string()))?;
    let Some(c) = containers
        .iter()
        .find(|c| c.get("name").and_then(|n| n.as_str()) == Some(what))
        .or_else(|| containers.first())
    else {
        return Ok(None);
    };
    let mut argv: Vec<&str> = Vec::new();
    for key in ["command", "args"] {
        let Some(v) = c.get(key) else { continue };
        let items = v.as_array().ok_or_else(|| ManifestError::NotList {
            what: what.to_string(),
            key,
        })?;
        for item in items {
            // Kubernetes decodes command and args as strings: a manifest
            // with another type never runs.
            argv.push(item.as_str().ok_or_else(|| ManifestError::NotStringItem {
                what: what.to_string(),
                key,
                item: format!("{item:?}"),
            })?);
        }
    }
    // With a command, its first item is the program; with args only, the
    // image's entrypoint is, and every item is an argument.
    let skip = usize::from(c.get("command").is_some() && !argv.is_empty());
    let name = flag.trim_start_matches('-');
    let found = crate::rules::flags::parse(&argv[skip..], syntax, &[name]).map_err(|flag| {
        ManifestError::Flag {
            what: what.to_string(),
            flag,
        }
    })?;
    Ok(found.get(&name.replace('_', "-")).cloned())
}

/// `--secure-port` from the kube-apiserver manifest (default 6443), as
/// pflag's `IntVar` reads it.
pub fn apiserver_secure_port(bytes: &[u8]) -> Result<u16, ManifestError> {
    match container_flag(
        bytes,
        "kube-apiserver",
        "--secure-port",
        crate::rules::flags::Syntax::Pflag,
    )? {
        None => Ok(6443),
        Some(v) => crate::rules::flags::parse_int(&v)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or(ManifestError::NotPort {
                what: None,
                value: v,
            }),
    }
}

/// The port of the `https://127.0.0.1:<port>` URL in etcd's
/// `--listen-client-urls` (default 2379), as etcd (Go's `flag`) reads it.
pub fn etcd_client_port(bytes: &[u8]) -> Result<u16, ManifestError> {
    let Some(urls) = container_flag(
        bytes,
        "etcd",
        "--listen-client-urls",
        crate::rules::flags::Syntax::GoFlag,
    )?
    else {
        return Ok(2379);
    };
    for u in urls.split(',') {
        if let Some(rest) = u.trim().strip_prefix("https://127.0.0.1:") {
            return rest
                .trim_end_matches('/')
                .parse::<u16>()
                .map_err(|_| ManifestError::BadPort {
                    flag: "--listen-client-urls",
                    url: u.to_string(),
                });
        }
    }
    Ok(2379)
}

/// Where etcd's peer port listens: the first `https://IP:PORT` of
/// `--listen-peer-urls` (Go's `flag`; default `http://localhost:2380`,
/// which serves no certificate). An unspecified address (0.0.0.0, [::])
/// is asked on the loopback address of its family.
pub fn etcd_peer_address(bytes: &[u8]) -> Result<std::net::SocketAddr, ManifestError> {
    let urls = container_flag(
        bytes,
        "etcd",
        "--listen-peer-urls",
        crate::rules::flags::Syntax::GoFlag,
    )?
    .ok_or(ManifestError::NoPeerUrls)?;
    for u in urls.split(',') {
        let Some(rest) = u.trim().strip_prefix("https://") else {
            continue;
        };
        let hostport = rest.trim_end_matches('/');
        let addr: std::net::SocketAddr = match hostport.parse() {
            Ok(a) => a,
            Err(_) => match hostport.rsplit_once(':') {
                Some(("localhost", p)) => std::net::SocketAddr::from((
                    [127, 0, 0, 1],
                    p.parse::<u16>().map_err(|_| ManifestError::BadPort {
                        flag: "--listen-peer-urls",
                        url: u.to_string(),
                    })?,
                )),
                _ => {
                    return Err(ManifestError::NotIpPort {
                        flag: "--listen-peer-urls",
                        url: u.to_string(),
                    })
                }
            },
        };
        return Ok(std::net::SocketAddr::new(
            loopback_if_unspecified(addr.ip()),
            addr.port(),
        ));
    }
    Err(ManifestError::NoHttps(urls))
}

/// An unspecified address (`0.0.0.0`, `::`: the component listens on every
/// address of its family) is asked on that family's loopback.
fn loopback_if_unspecified(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        other => other,
    }
}

/// The files kubeadm renews that kubelet mounts into a static pod
/// (`spec.volumes[].hostPath.path`), and the pod's first container's name:
/// kube-vip mounts admin.conf (or super-admin.conf on the first node).
pub fn renewed_mounts(bytes: &[u8]) -> Option<(String, Vec<String>)> {
    const RENEWED: [&str; 4] = [
        "/etc/kubernetes/admin.conf",
        "/etc/kubernetes/super-admin.conf",
        "/etc/kubernetes/controller-manager.conf",
        "/etc/kubernetes/scheduler.conf",
    ];
    let doc = crate::rules::yaml::parse_value(bytes).ok()?;
    let spec = doc.get("spec")?;
    let name = spec
        .get("containers")?
        .as_array()?
        .first()?
        .get("name")?
        .as_str()?
        .to_string();
    let mounts: Vec<String> = spec
        .get("volumes")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("hostPath")?.get("path")?.as_str())
        .filter(|p| RENEWED.contains(p))
        .map(str::to_string)
        .collect();
    (!mounts.is_empty()).then_some((name, mounts))
}

/// What an operator is told of `manifests/` and the staging directories
/// (check, the operator view and the fencing check say it alike).
impl ManifestsReport {
    /// Manifest problems that fail a check: any of the four staged or missing
    /// (or refused), a file of `manifests/` refused as hostile (SPEC 10,
    /// "Bounded reads"), and anything unexpected in the runbook's staging
    /// directory.
    pub fn problems(&self) -> Vec<String> {
        crate::rules::progress::words(&self.reasons())
    }

    /// [`problems`](Self::problems), each with what it is about (the
    /// operator view tells a renewal's progress by it).
    pub fn reasons(&self) -> Vec<Reason> {
        let m = self;
        let mut v = Vec::new();
        if let Some(e) = &m.manifests_dir_error {
            v.push(Reason::other(e.clone()));
        }
        v.extend(m.hostile.iter().cloned().map(Reason::other));
        for (c, view) in &m.manifests {
            if let Some(e) = &view.error {
                v.push(Reason::other(e.clone()));
                continue;
            }
            let mut where_: Vec<&str> = Vec::new();
            if view.runbook_staged {
                where_.push("the runbook's staging directory");
            }
            if view.agent_staged {
                where_.push("the node agent's staging directory");
            }
            if !view.active && where_.is_empty() {
                // External etcd has no etcd pod: its verdict says so.
                if *c == Component::Etcd && m.external_etcd.is_some() {
                    continue;
                }
                v.push(Reason::component(*c, format!("{c} manifest is missing")));
            } else if !view.active {
                v.push(Reason::component(
                    *c,
                    format!(
                        "{c} manifest is staged in {} and not active",
                        where_.join(" and ")
                    ),
                ));
            } else if !where_.is_empty() {
                v.push(Reason::component(
                    *c,
                    format!(
                        "{c} manifest is both active and staged in {}",
                        where_.join(" and ")
                    ),
                ));
            }
        }
        for (view, who) in [
            (&m.runbook_staging, "runbook"),
            (&m.agent_staging, "node agent"),
        ] {
            if let Some(e) = &view.error {
                v.push(Reason::other(format!("{who} staging directory: {e}")));
            }
        }
        for name in &m.runbook_staging.unexpected {
            v.push(Reason::other(format!(
                "unexpected entry {}/{name} in the runbook's staging directory",
                m.runbook_staging.path
            )));
        }
        v
    }

    /// The strays of `manifests/`, as warnings.
    pub fn stray_warnings(&self) -> Vec<String> {
        let m = self;
        m.strays
            .iter()
            .map(|s| format!("stray manifest {}: {}", s.path, s.reason))
            .collect()
    }

    /// The four manifests that are in the runbook's staging directory and not
    /// in `manifests/`, neither refused: what a dead run's exit would have put
    /// back. A manifest both staged and active is never moved.
    pub fn staged_not_active(&self) -> Vec<Component> {
        let m = self;
        m.manifests
            .iter()
            .filter(|(_, v)| v.runbook_staged && !v.active && v.error.is_none())
            .map(|(c, _)| *c)
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files in their temp dirs
mod tests {
    use super::*;

    /// SPEC 12 (v1.3): a URL's host as the external-etcd rule reads it:
    /// brackets for IPv6, `localhost` by name, any other name never this
    /// host's.
    #[test]
    fn url_hosts_are_read_in_both_families() {
        let ip = |s: &str| Some(UrlHost::Ip(s.parse().unwrap()));
        assert_eq!(url_host("https://127.0.0.1:2379"), ip("127.0.0.1"));
        assert_eq!(url_host("https://[::1]:2379"), ip("::1"));
        assert_eq!(
            url_host("https://[2001:db8::10]:2379/x"),
            ip("2001:db8::10")
        );
        assert_eq!(url_host("https://LocalHost:2379"), Some(UrlHost::Localhost));
        assert_eq!(url_host("https://etcd-1.example:2379"), Some(UrlHost::Name));
        assert_eq!(url_host("https://10.0.0.5"), ip("10.0.0.5"));
        assert_eq!(url_host("10.0.0.5:2379"), None);
        assert_eq!(url_host("https://[::1"), None);
        assert_eq!(url_host("https://:2379"), None);
    }

    /// SPEC 12 (v1.3): external etcd only when no etcd manifest is anywhere
    /// and every `--etcd-servers` URL is another machine's; a stacked
    /// etcd's lost manifest stays a missing manifest (exit 4).
    #[test]
    fn external_etcd_is_told_from_a_lost_etcd_manifest() {
        let t = crate::tools::runtime::double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let m = t.path().join("etc/kubernetes/manifests");
        assert_eq!(placement(&root).external_etcd, None, "stacked");
        std::fs::remove_file(m.join("etcd.yaml")).unwrap();
        assert_eq!(
            placement(&root).external_etcd,
            None,
            "loopback servers: stacked"
        );
        assert!(!placement(&root).all_active());
        let api = m.join("kube-apiserver.yaml");
        let yaml = std::fs::read_to_string(&api).unwrap();
        let servers = |v: &str| {
            let start = yaml.find("--etcd-servers=").unwrap();
            let end = start + yaml[start..].find('\n').unwrap();
            std::fs::write(
                &api,
                format!("{}--etcd-servers={v}{}", &yaml[..start], &yaml[end..]),
            )
            .unwrap();
            placement(&root)
        };
        for external in [
            "https://192.0.2.10:2379",
            "https://etcd.example:2379,https://[2001:db8::1]:2379",
        ] {
            let p = servers(external);
            assert_eq!(p.external_etcd.as_deref(), Some(external));
            assert!(p.all_active(), "etcd is not this node's to run");
            assert!(p
                .external_etcd_verdict()
                .unwrap()
                .starts_with(EXTERNAL_ETCD));
            assert!(p.problems().is_empty(), "{:?}", p.problems());
        }
        for local in [
            "https://192.0.2.10:2379,https://[::1]:2379",
            "https://localhost:2379",
        ] {
            assert_eq!(servers(local).external_etcd, None, "{local}");
        }
    }

    #[test]
    fn pod_component_by_label_and_name() {
        let etcd = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\n  labels:\n    component: etcd\n";
        assert_eq!(pod_component(etcd), Ok(Some(Component::Etcd)));
        let named = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-scheduler\n";
        assert_eq!(pod_component(named), Ok(Some(Component::KubeScheduler)));
        let vip = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-vip\n  labels:\n    app: kube-vip\n";
        assert_eq!(pod_component(vip), Ok(None));
        assert!(pod_component(b"\xff\xfe not yaml").is_err_and(|e| !e.is_bound()));
    }

    #[test]
    fn etcd_port_from_listen_client_urls() {
        let m = b"spec:\n  containers:\n  - command:\n    - etcd\n    - --listen-client-urls=https://127.0.0.1:32379,https://10.0.0.11:2379\n";
        assert_eq!(etcd_client_port(m), Ok(32379));
        let none = b"spec:\n  containers:\n  - command:\n    - etcd\n";
        assert_eq!(etcd_client_port(none), Ok(2379));
        let bad =
            b"spec:\n  containers:\n  - command:\n    - etcd\n    - --listen-client-urls=https://127.0.0.1:x\n";
        assert!(etcd_client_port(bad).is_err());
    }

    #[test]
    fn secure_port() {
        let m =
            b"spec:\n  containers:\n  - command:\n    - kube-apiserver\n    - --secure-port=7443\n";
        assert_eq!(apiserver_secure_port(m), Ok(7443));
        let d = b"spec:\n  containers:\n  - command:\n    - kube-apiserver\n";
        assert_eq!(apiserver_secure_port(d), Ok(6443));
        assert!(apiserver_secure_port(
            b"spec:\n  containers:\n  - command: [kube-apiserver, \"--secure-port=x\"]\n"
        )
        .is_err());
        assert!(apiserver_secure_port(b"{}").is_err());
    }

    #[test]
    fn secure_port_as_pflag_reads_it() {
        let two = b"spec:\n  containers:\n  - name: kube-apiserver\n    command:\n    - kube-apiserver\n    - --advertise-address=10.0.0.1\n    - --secure-port\n    - \"6444\"\n";
        assert_eq!(apiserver_secure_port(two), Ok(6444));
        let repeated = b"spec:\n  containers:\n  - command:\n    - kube-apiserver\n    - --secure-port=6443\n    args:\n    - --secure-port=6445\n";
        assert_eq!(
            apiserver_secure_port(repeated),
            Ok(6445),
            "last wins, args after command"
        );
        let sidecar = b"spec:\n  containers:\n  - name: sidecar\n    command: [x, --secure-port=1]\n  - name: kube-apiserver\n    command: [kube-apiserver, --secure-port=7443]\n";
        assert_eq!(
            apiserver_secure_port(sidecar),
            Ok(7443),
            "the component's container"
        );
        let args_only =
            b"spec:\n  containers:\n  - name: kube-apiserver\n    args: [--secure-port=7444]\n";
        assert_eq!(apiserver_secure_port(args_only), Ok(7444));
        let hex = b"spec:\n  containers:\n  - command: [kube-apiserver, --secure-port=0x1920]\n";
        assert_eq!(apiserver_secure_port(hex), Ok(0x1920));
        let zero = b"spec:\n  containers:\n  - command: [kube-apiserver, --secure-port=0]\n";
        assert!(apiserver_secure_port(zero).is_err());
        let int_item =
            b"spec:\n  containers:\n  - command: [kube-apiserver, --secure-port, 6444]\n";
        assert!(
            apiserver_secure_port(int_item).is_err(),
            "kubelet would not run it"
        );
    }

    #[test]
    fn etcd_port_as_go_flag_reads_it() {
        let two = b"spec:\n  containers:\n  - name: etcd\n    command:\n    - etcd\n    - -listen-client-urls\n    - https://127.0.0.1:32379\n    - --listen-client-urls=https://127.0.0.1:42379,https://10.0.0.11:2379\n";
        assert_eq!(etcd_client_port(two), Ok(42379), "last wins");
    }

    /// Nodes and nesting of a parsed document.
    fn size(v: &serde_json::Value) -> (usize, usize) {
        match v {
            serde_json::Value::Array(a) => a
                .iter()
                .map(size)
                .fold((1, 1), |(n, d), (cn, cd)| (n + cn, d.max(cd + 1))),
            serde_json::Value::Object(o) => o
                .values()
                .map(size)
                .fold((1, 1), |(n, d), (cn, cd)| (n + 1 + cn, d.max(cd + 1))),
            _ => (1, 1),
        }
    }

    /// The largest real-looking kube-apiserver manifest: the fixture's, with
    /// 400 more flags, a 20 KB flag value, 250 env vars, 120 hostPath
    /// volumes, 200 annotations of 1 KB and one of about 700 KB (a
    /// `last-applied-configuration`-style JSON blob), just under the 1 MiB
    /// cap. Every bound of `rules::yaml` stays at least ten times away, and
    /// the file is read as before.
    pub(crate) fn largest_real_manifest() -> Vec<u8> {
        let base =
            include_str!("../../fixtures/nodes/rsa/etc/kubernetes/manifests/kube-apiserver.yaml");
        let mut flags = String::new();
        for i in 0..400 {
            flags.push_str(&format!(
                "    - --feature-flag-number-{i}=some-long-value-{i}-{}\n",
                "v".repeat(40)
            ));
        }
        flags.push_str(&format!(
            "    - --tls-cipher-suites={}\n",
            ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"; 540].join(",")
        ));
        let m = base.replacen(
            "    - kube-apiserver\n",
            &format!("    - kube-apiserver\n{flags}"),
            1,
        );
        let mut ann = String::new();
        for i in 0..200 {
            ann.push_str(&format!(
                "    example.com/annotation-{i}: \"{}\"\n",
                "a".repeat(1000)
            ));
        }
        let blob: String = (0..9_000)
            .map(|i| {
                format!(
                    "{{\"k{i}\":\"value-{i}-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}},"
                )
            })
            .collect();
        ann.push_str(&format!(
            "    kubectl.kubernetes.io/last-applied-configuration: '[{blob}{{}}]'\n"
        ));
        let m = m.replacen("  annotations:\n", &format!("  annotations:\n{ann}"), 1);
        let mut env = String::from("    env:\n");
        for i in 0..250 {
            env.push_str(&format!(
                "    - name: VAR_{i}\n      value: \"value-{i}\"\n"
            ));
        }
        let m = m.replacen("    image:", &format!("{env}    image:"), 1);
        let mut vols = String::new();
        for i in 0..120 {
            vols.push_str(&format!("  - hostPath:\n      path: /etc/extra/{i}\n      type: DirectoryOrCreate\n    name: extra-{i}\n"));
        }
        let m = m.replacen("  volumes:\n", &format!("  volumes:\n{vols}"), 1);
        m.into_bytes()
    }

    #[test]
    fn the_largest_real_looking_manifest_is_well_within_every_bound() {
        use crate::rules::yaml;
        let m = largest_real_manifest();
        let len = m.len();
        assert!((900_000..yaml::MAX_BYTES).contains(&len), "{len} bytes");
        let v = yaml::parse_value(&m).unwrap();
        let (nodes, depth) = size(&v);
        assert!(nodes * 10 < yaml::MAX_NODES, "{nodes} nodes");
        assert!(depth * 5 < yaml::MAX_DEPTH, "{depth} deep");
        assert!(
            v["spec"]["containers"][0]["command"]
                .as_array()
                .unwrap()
                .len()
                > 400
        );
        assert!(v["spec"]["volumes"].as_array().unwrap().len() > 120);
        assert_eq!(pod_component(&m), Ok(Some(Component::KubeApiserver)));
        assert_eq!(apiserver_secure_port(&m), Ok(6443));
        assert_eq!(
            container_flag(
                &m,
                "kube-apiserver",
                "--feature-flag-number-399",
                crate::rules::flags::Syntax::Pflag
            )
            .unwrap()
            .map(|f| f.len()),
            Some(60)
        );
        // As a file of manifests/ and as a stray: nothing refused.
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("m");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("kube-apiserver.yaml"), &m).unwrap();
        std::fs::write(dir.join("kube-apiserver-copy.txt"), &m).unwrap();
        std::fs::write(dir.join("big-pod.yaml"), &m).unwrap();
        let root = Root::open(t.path()).unwrap();
        let d = root.open_dir("m", Trust::TypeOnly).unwrap().unwrap();
        let (strays, hostile) = read_contents(&d);
        assert!(hostile.is_empty(), "{hostile:?}");
        assert_eq!(strays.len(), 2, "{strays:?}");
        // Every real fixture manifest too.
        for variant in ["rsa", "ecdsa"] {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/nodes")
                .join(variant)
                .join(MANIFESTS_DIR);
            for e in std::fs::read_dir(p).unwrap() {
                let b = std::fs::read(e.unwrap().path()).unwrap();
                assert!(yaml::parse_value(&b).is_ok());
            }
        }
    }

    /// A bomb among the strays, one in a component's manifest, one too
    /// large: each refused as hostile, named; a file that is merely not
    /// YAML is not.
    #[test]
    fn hostile_files_of_the_manifests_directory_are_named() {
        let bomb = {
            // The 56 KB file of issue 25: one anchor of 16,000 scalars.
            let mut s = format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  annotations:\n    a: &a [{}]\n    b: [", ["x"; 16_000].join(","));
            s.push_str(&["*a"; 6000].join(", "));
            s.push_str("]\n");
            s
        };
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("m");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("bomb.yaml"), &bomb).unwrap();
        std::fs::write(dir.join("etcd.yaml"), &bomb).unwrap();
        std::fs::write(dir.join("huge.yaml"), vec![b'#'; 2 << 20]).unwrap();
        std::fs::write(dir.join("garbage.yaml"), b"\xff\xfe: : [").unwrap();
        std::fs::write(dir.join(".hidden.yaml"), &bomb).unwrap();
        let root = Root::open(t.path()).unwrap();
        let d = root.open_dir("m", Trust::TypeOnly).unwrap().unwrap();
        let (strays, hostile) = read_contents(&d);
        assert!(strays.is_empty(), "{strays:?}");
        assert_eq!(hostile.len(), 3, "{hostile:?}");
        let all = hostile.join("\n");
        for needle in [
            "/m/bomb.yaml is hostile YAML (more than 100000 nodes); refusing to read it",
            "/m/huge.yaml is larger than 1048576 bytes; refusing to read it (hostile input)",
            "/m/etcd.yaml is hostile YAML (more than 100000 nodes)",
        ] {
            assert!(all.contains(needle), "{needle} not in {all}");
        }
        assert!(!all.contains("garbage") && !all.contains("hidden"), "{all}");
        assert!(!all.chars().any(|c| c.is_control() && c != '\n'));
    }
}
