//! The kubelet's own certificates (SPEC v1.2 section 10), read, never
//! renewed here: the kubelet rotates them. Its client certificate is the
//! `client-certificate` of `/etc/kubernetes/kubelet.conf` (kubeadm points it
//! at `/var/lib/kubelet/pki/kubelet-client-current.pem`, a symlink the
//! kubelet's certificate manager moves to each new pair); its serving
//! certificate is `kubelet-server-current.pem` (with `serverTLSBootstrap`)
//! or the self-signed `kubelet.crt`. Whether the kubelet rotates them comes
//! from `rotateCertificates` and `serverTLSBootstrap` in its configuration.

use crate::node::fsx::{FsError, Root, Trust};
use crate::rules::pki;
use time::OffsetDateTime;

pub const KUBELET_CONF: &str = "etc/kubernetes/kubelet.conf";
pub const KUBELET_PKI: &str = "var/lib/kubelet/pki";
/// The kubelet's configuration (as `tools::endpoint` reads it too).
const KUBELET_CONFIG: &str = "var/lib/kubelet/config.yaml";
/// A kubeconfig or the kubelet's configuration: far above any real one.
const CONFIG_MAX: u64 = 256 * 1024;
/// A certificate file (the kubelet's pair files hold a key too).
const CERT_MAX: u64 = 64 * 1024;

pub use crate::contract::KubeletRole;

/// One of the kubelet's certificates as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletCert {
    pub role: KubeletRole,
    /// Node path of the file read (the symlink's, when it is one).
    pub path: String,
    pub not_after: Option<OffsetDateTime>,
    /// Whether the kubelet rotates it (None: its configuration could not be read).
    pub rotates: Option<bool>,
    pub error: Option<String>,
}

/// What the kubelet's files say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeletReport {
    pub certs: Vec<KubeletCert>,
    /// Why nothing is listed (no kubelet.conf: not a kubeadm node).
    pub note: Option<String>,
    /// The kubelet's configuration refused as hostile (SPEC 10, "Bounded
    /// reads"): over its size cap or a bound of the YAML reader.
    pub hostile: Option<String>,
}

/// Why the kubelet's configuration or one of its certificates was not read.
#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    /// A bound is named as is; a syntax error says what the file is not.
    #[error("{yaml}{}", if .yaml.is_bound() { "" } else { ": not the kubelet's configuration" })]
    Config { yaml: crate::rules::yaml::YamlError },
    #[error("{0} in the kubelet's configuration is not true or false")]
    NotBool(&'static str),
    #[error("{0:?} is not an absolute path")]
    NotAbsolute(String),
    #[error("{0:?} is not a plain absolute path")]
    NotPlain(String),
    #[error(transparent)]
    Fs(#[from] FsError),
    /// `target`: an escaped excerpt.
    #[error("{path} is a symlink to {target}, outside its directory: refused")]
    OutsideDir { path: String, target: String },
    #[error("{path} is a symlink to {target}, which does not exist")]
    Dangling { path: String, target: String },
    /// The path as shown.
    #[error("{0} does not exist")]
    Missing(String),
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    /// kubelet.conf (`path`) could not be read or names no certificate.
    #[error("{path}: {inner}")]
    Conf {
        path: String,
        inner: Box<KubeletError>,
    },
}

/// `rotateCertificates` and `serverTLSBootstrap` of the kubelet's
/// configuration (absent keys: the kubelet's defaults, false). Pure; the
/// same `Value` reading as `tools::endpoint` (no second typed YAML
/// deserializer in the static binary).
pub fn parse_rotation(bytes: &[u8]) -> Result<(bool, bool), KubeletError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((false, false));
    }
    let doc =
        crate::rules::yaml::parse_value(bytes).map_err(|yaml| KubeletError::Config { yaml })?;
    let flag = |key: &'static str| match doc.get(key) {
        None | Some(serde_json::Value::Null) => Ok(false),
        Some(v) => v.as_bool().ok_or(KubeletError::NotBool(key)),
    };
    Ok((flag("rotateCertificates")?, flag("serverTLSBootstrap")?))
}

/// A node path of the kubelet's as a path under the root: absolute, no
/// `.` or `..` parts.
fn under_root(path: &str) -> Result<String, KubeletError> {
    let rel = path
        .strip_prefix('/')
        .ok_or_else(|| KubeletError::NotAbsolute(path.to_string()))?;
    if rel.is_empty()
        || rel
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return Err(KubeletError::NotPlain(path.to_string()));
    }
    Ok(rel.to_string())
}

/// Read a certificate file, following at most one symlink, and only to a
/// file in the same directory (the kubelet's `*-current.pem` links):
/// anything else is refused, never followed.
fn read_cert_file(root: &Root, rel: &str) -> Result<Option<Vec<u8>>, KubeletError> {
    let Some((dir, name)) = root.open_parent(rel)? else {
        return Ok(None);
    };
    match dir.read_file(name, CERT_MAX, Trust::TypeOnly) {
        Err(FsError::Symlink { .. }) => {}
        other => return Ok(other?),
    }
    let target = dir.read_link(name)?.unwrap_or_default();
    let parent = format!("/{}/", rel.rsplit_once('/').map(|(p, _)| p).unwrap_or(""));
    let same_dir = target.strip_prefix(&parent).unwrap_or(&target);
    if same_dir.is_empty() || same_dir.contains('/') || same_dir == "." || same_dir == ".." {
        return Err(KubeletError::OutsideDir {
            path: crate::node::paths::node(rel),
            target: crate::rules::opid::excerpt(&target),
        });
    }
    dir.read_file(same_dir, CERT_MAX, Trust::TypeOnly)?
        .ok_or_else(|| KubeletError::Dangling {
            path: crate::node::paths::node(rel),
            target: same_dir.to_string(),
        })
        .map(Some)
}

fn cert(
    role: KubeletRole,
    path: String,
    rotates: Option<bool>,
    pem: Result<Vec<u8>, KubeletError>,
) -> KubeletCert {
    let parsed = pem.and_then(|b| Ok(pki::parse_pem_certificate(&b)?));
    let (not_after, error) = match parsed {
        Ok(c) => (Some(c.not_after), None),
        Err(e) => (None, Some(e.to_string())),
    };
    KubeletCert {
        role,
        path,
        not_after,
        rotates,
        error,
    }
}

/// Read the kubelet's certificates and whether it rotates them.
/// The kubelet's configuration refused as hostile: over its size cap or a
/// bound of the YAML reader (SPEC 10, "Bounded reads"), named. None: within
/// the bounds, absent, or refused for another reason (reported where it is
/// read).
pub fn hostile_config(root: &Root) -> Option<String> {
    match root.read_file(KUBELET_CONFIG, CONFIG_MAX, Trust::TypeOnly) {
        Ok(Some(b)) => match crate::rules::yaml::parse_value(&b) {
            Err(e) if e.is_bound() => Some(format!(
                "{} is {e}",
                crate::node::paths::node(KUBELET_CONFIG)
            )),
            _ => None,
        },
        Err(e @ FsError::TooLarge { .. }) => Some(format!("{e} (hostile input)")),
        _ => None,
    }
}

pub fn read(root: &Root) -> KubeletReport {
    let hostile = hostile_config(root);
    let conf = match root.read_file(KUBELET_CONF, CONFIG_MAX, Trust::TypeOnly) {
        Ok(Some(b)) => Ok(b),
        Ok(None) => {
            return KubeletReport {
                certs: Vec::new(),
                note: Some(format!(
                    "no {}: the kubelet's certificates are not listed",
                    crate::node::paths::node(KUBELET_CONF)
                )),
                hostile,
            }
        }
        Err(e) => Err(KubeletError::Fs(e)),
    };
    let rotation = match root.read_file(KUBELET_CONFIG, CONFIG_MAX, Trust::TypeOnly) {
        Ok(Some(b)) => parse_rotation(&b).ok(),
        Ok(None) => Some((false, false)),
        Err(_) => None,
    };
    let conf_path = crate::node::paths::node(KUBELET_CONF);
    let client = match conf.and_then(|b| Ok(pki::kubeconfig_client_cert(&b)?)) {
        Ok(pki::KubeconfigCert::Embedded(pem)) => cert(
            KubeletRole::Client,
            conf_path,
            rotation.map(|r| r.0),
            Ok(pem),
        ),
        Ok(pki::KubeconfigCert::File(p)) => {
            let shown = shown_path(&p);
            let pem = under_root(&p).and_then(|rel| {
                read_cert_file(root, &rel)?.ok_or_else(|| KubeletError::Missing(shown.clone()))
            });
            cert(KubeletRole::Client, shown, rotation.map(|r| r.0), pem)
        }
        Err(e) => cert(
            KubeletRole::Client,
            conf_path,
            rotation.map(|r| r.0),
            Err(KubeletError::Conf {
                path: crate::node::paths::node(KUBELET_CONF),
                inner: Box::new(e),
            }),
        ),
    };
    let mut certs = vec![client];
    // The rotated serving pair when there is one, else the self-signed one.
    let mut serving = None;
    for name in ["kubelet-server-current.pem", "kubelet.crt"] {
        let rel = format!("{KUBELET_PKI}/{name}");
        match read_cert_file(root, &rel) {
            Ok(None) => continue,
            r => {
                serving = Some(cert(
                    KubeletRole::Serving,
                    crate::node::paths::node(&rel),
                    rotation.map(|r| r.1),
                    r.map(Option::unwrap_or_default),
                ));
                break;
            }
        }
    }
    certs.extend(serving);
    KubeletReport {
        certs,
        note: None,
        hostile,
    }
}

impl KubeletCert {
    /// As the read-only modes print it.
    pub fn view(
        &self,
        now: OffsetDateTime,
        threshold: u32,
    ) -> crate::contract::KubeletCertificateView {
        crate::contract::KubeletCertificateView {
            role: self.role,
            path: self.path.clone(),
            not_after: self
                .not_after
                .map(|t| crate::contract::Timestamp(crate::rules::clock::rfc3339(t))),
            days_left: self
                .not_after
                .map(|t| crate::rules::clock::days_until(now, t)),
            severity: self
                .not_after
                .map(|t| crate::rules::expiry::judge(now, t, threshold)),
            rotates: self.rotates,
            error: self.error.clone(),
        }
    }
}

impl KubeletReport {
    /// The client certificate with its notAfter, when it has expired.
    fn expired_clients(
        &self,
        now: OffsetDateTime,
    ) -> impl Iterator<Item = (&KubeletCert, OffsetDateTime)> {
        self.certs
            .iter()
            .filter(|c| c.role == KubeletRole::Client)
            .filter_map(|c| Some((c, c.not_after?)))
            .filter(move |(_, t)| crate::rules::expiry::is_expired(now, *t))
    }

    /// Problems: an expired client certificate (ACTION NEEDED, SPEC 6: the
    /// node drops out of the cluster). An expired serving certificate is a
    /// warning: kubeadm's self-signed `kubelet.crt` is never rotated, and
    /// only `kubectl logs`/`exec` against this node refuse it.
    pub fn expired(&self, now: OffsetDateTime) -> Vec<String> {
        self.expired_clients(now)
            .map(|(c, t)| {
                format!(
                    "the kubelet's {} certificate {} expired {} ({}): the kubelet rotates it only while it is valid; renew it by hand (kubeadm's troubleshooting guide: \"Kubelet client cert rotation fails\")",
                    role_word(c.role),
                    c.path,
                    crate::rules::expiry::date(t),
                    crate::rules::expiry::ago(now, t)
                )
            })
            .collect()
    }

    /// The headline's words for each expired one: `kubelet client
    /// certificate expired 2026-11-30 (2 days ago)`.
    pub fn expired_words(&self, now: OffsetDateTime) -> Vec<String> {
        self.expired_clients(now)
            .map(|(c, t)| {
                format!(
                    "kubelet {} certificate expired {} ({})",
                    role_word(c.role),
                    crate::rules::expiry::date(t),
                    crate::rules::expiry::ago(now, t)
                )
            })
            .collect()
    }

    /// The ones that could not be read (not checked: never clean in the
    /// operator view, SPEC 10).
    pub fn unreadable(&self) -> Vec<String> {
        self.certs
            .iter()
            .filter_map(|c| {
                let e = c.error.as_ref()?;
                Some(format!(
                    "the kubelet's {} certificate is not checked: {e}",
                    role_word(c.role)
                ))
            })
            .collect()
    }

    /// Warnings: due while the kubelet does not rotate it, or unreadable.
    pub fn warnings(&self, now: OffsetDateTime, threshold: u32) -> Vec<String> {
        let mut w = Vec::new();
        for c in &self.certs {
            let Some(t) = c.not_after else { continue };
            if c.role == KubeletRole::Serving && crate::rules::expiry::is_expired(now, t) {
                w.push(format!(
                    "the kubelet's serving certificate {} expired {} ({}): the API server's logs and exec on this node fail until the kubelet has a new one ({}); this runbook never renews it",
                    c.path,
                    crate::rules::expiry::date(t),
                    crate::rules::expiry::ago(now, t),
                    if c.rotates == Some(true) { "it requests one itself" } else { "serverTLSBootstrap is off: delete kubelet.crt and kubelet.key and restart the kubelet" }
                ));
                continue;
            }
            if crate::rules::expiry::judge(now, t, threshold) == crate::rules::expiry::Expiry::Due
                && c.rotates != Some(true)
            {
                w.push(format!(
                    "the kubelet's {} certificate {} expires {} ({}) and the kubelet does not rotate it ({}); this runbook never renews it",
                    role_word(c.role),
                    c.path,
                    crate::rules::expiry::date(t),
                    crate::rules::expiry::within(now, t),
                    match c.role {
                        KubeletRole::Client => "rotateCertificates",
                        KubeletRole::Serving => "serverTLSBootstrap",
                    }
                ));
            }
        }
        w
    }

    pub fn views(
        &self,
        now: OffsetDateTime,
        threshold: u32,
    ) -> Vec<crate::contract::KubeletCertificateView> {
        self.certs.iter().map(|c| c.view(now, threshold)).collect()
    }
}

/// A path from the kubelet's kubeconfig as printed: as it is when it is a
/// plain printable path of at most 256 bytes, else a quoted excerpt.
fn shown_path(p: &str) -> String {
    if p.len() <= 256 && p.chars().all(|c| c.is_ascii_graphic()) {
        p.to_string()
    } else {
        crate::rules::opid::excerpt(p)
    }
}

fn role_word(r: KubeletRole) -> &'static str {
    match r {
        KubeletRole::Client => "client",
        KubeletRole::Serving => "serving",
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read and plant files in their temp node
mod tests {
    use super::*;

    #[test]
    fn rotation_is_read_with_the_kubelets_defaults() {
        assert_eq!(parse_rotation(b"").unwrap(), (false, false));
        assert_eq!(
            parse_rotation(b"kind: KubeletConfiguration\nrotateCertificates: true\n").unwrap(),
            (true, false)
        );
        assert_eq!(
            parse_rotation(b"rotateCertificates: false\nserverTLSBootstrap: true\n").unwrap(),
            (false, true)
        );
        assert!(parse_rotation(b"rotateCertificates: [").is_err());
        assert!(parse_rotation(b"rotateCertificates: maybe\n").is_err());
    }

    fn fixture_cert(name: &str) -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/nodes/rsa/etc/kubernetes/pki")
                .join(name),
        )
        .unwrap()
    }

    fn node(conf: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let kp = t.path().join(KUBELET_PKI);
        std::fs::create_dir_all(&kp).unwrap();
        std::fs::create_dir_all(t.path().join("etc/kubernetes")).unwrap();
        std::fs::write(t.path().join(KUBELET_CONF), conf).unwrap();
        std::fs::write(
            kp.join("kubelet-client-2026.pem"),
            fixture_cert("apiserver-kubelet-client.crt"),
        )
        .unwrap();
        std::fs::write(kp.join("kubelet.crt"), fixture_cert("apiserver.crt")).unwrap();
        t
    }

    const CONF: &str = "users:\n- name: default-auth\n  user:\n    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem\n    client-key: /var/lib/kubelet/pki/kubelet-client-current.pem\n";

    fn read_at(t: &tempfile::TempDir) -> KubeletReport {
        read(&Root::open(t.path()).unwrap())
    }

    #[test]
    fn the_current_symlink_is_followed_within_its_directory_only() {
        let t = node(CONF);
        let link = t
            .path()
            .join(KUBELET_PKI)
            .join("kubelet-client-current.pem");
        // The kubelet's own link: absolute, to a file beside it.
        std::os::unix::fs::symlink("/var/lib/kubelet/pki/kubelet-client-2026.pem", &link).unwrap();
        let r = read_at(&t);
        assert_eq!(r.certs.len(), 2);
        assert_eq!(r.certs[0].role, KubeletRole::Client);
        assert!(r.certs[0].error.is_none(), "{:?}", r.certs[0].error);
        assert!(r.certs[0].not_after.is_some());
        assert_eq!(r.certs[1].role, KubeletRole::Serving);
        assert_eq!(r.certs[1].path, "/var/lib/kubelet/pki/kubelet.crt");
        // Relative, beside it: followed too.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("kubelet-client-2026.pem", &link).unwrap();
        assert!(read_at(&t).certs[0].error.is_none());
        // Anywhere else (a key, another directory, a second hop): refused.
        for target in [
            "/etc/kubernetes/pki/apiserver.key",
            "../../../../etc/kubernetes/pki/apiserver.key",
            "kubelet-client-current.pem",
        ] {
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(target, &link).unwrap();
            let r = read_at(&t);
            let e = r.certs[0].error.clone().unwrap_or_default();
            assert!(
                e.contains("refused") || e.contains("symlink"),
                "{target}: {e}"
            );
            assert!(r.certs[0].not_after.is_none());
            assert!(!r.unreadable().is_empty(), "never clean: {target}");
        }
    }

    #[test]
    fn a_huge_file_an_embedded_certificate_and_no_certificate() {
        let t = node(CONF);
        let kp = t.path().join(KUBELET_PKI);
        std::fs::write(
            kp.join("kubelet-client-current.pem"),
            vec![b'A'; 100 * 1024],
        )
        .unwrap();
        let e = read_at(&t).certs[0].error.clone().unwrap();
        assert!(
            e.contains("larger") || e.contains("too") || e.contains("bytes"),
            "{e}"
        );
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD
            .encode(fixture_cert("apiserver-kubelet-client.crt"));
        std::fs::write(
            t.path().join(KUBELET_CONF),
            format!("users:\n- name: u\n  user:\n    client-certificate-data: {data}\n    client-key-data: a2V5\n"),
        )
        .unwrap();
        let r = read_at(&t);
        assert!(r.certs[0].error.is_none(), "{:?}", r.certs[0].error);
        assert_eq!(r.certs[0].path, "/etc/kubernetes/kubelet.conf");
        std::fs::write(
            t.path().join(KUBELET_CONF),
            "users:\n- name: u\n  user: {}\n",
        )
        .unwrap();
        let r = read_at(&t);
        assert!(r.certs[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no client certificate"));
        assert_eq!(r.unreadable().len(), 1);
        std::fs::remove_file(t.path().join(KUBELET_CONF)).unwrap();
        let r = read_at(&t);
        assert!(r.certs.is_empty());
        assert!(r.note.is_some());
    }

    #[test]
    fn only_plain_absolute_paths_are_read() {
        assert_eq!(
            under_root("/var/lib/kubelet/pki/kubelet-client-current.pem").unwrap(),
            "var/lib/kubelet/pki/kubelet-client-current.pem"
        );
        for bad in [
            "relative.pem",
            "/",
            "/var/../etc/shadow",
            "/var//x",
            "/a/./b",
        ] {
            assert!(under_root(bad).is_err(), "{bad}");
        }
    }

    /// A large real-looking KubeletConfiguration (every field kubeadm
    /// writes, 300 feature gates, 200 eviction entries, a 100 KB
    /// `staticPodURLHeader`-style map) is read within every bound; the
    /// same keys behind an alias bomb are refused as hostile, named, in the
    /// report the read-only modes print, and the rotation flags are then
    /// unknown, never guessed.
    #[test]
    fn the_kubelets_configuration_is_read_within_the_bounds() {
        let mut real = String::from("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nauthentication:\n  anonymous:\n    enabled: false\n  webhook:\n    cacheTTL: 0s\n    enabled: true\n  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\nauthorization:\n  mode: Webhook\ncgroupDriver: systemd\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\nrotateCertificates: true\nserverTLSBootstrap: true\nstaticPodPath: /etc/kubernetes/manifests\nfeatureGates:\n");
        for i in 0..300 {
            real.push_str(&format!("  FeatureGateNumber{i}: true\n"));
        }
        real.push_str("evictionHard:\n");
        for i in 0..200 {
            real.push_str(&format!("  signal{i}.available: 5%\n"));
        }
        real.push_str("staticPodURLHeader:\n");
        for i in 0..100 {
            real.push_str(&format!("  X-Header-{i}:\n  - \"{}\"\n", "h".repeat(1000)));
        }
        assert!(real.len() < CONFIG_MAX as usize);
        assert_eq!(parse_rotation(real.as_bytes()).unwrap(), (true, true));
        let t = node(CONF);
        std::fs::write(t.path().join(KUBELET_CONFIG), &real).unwrap();
        let r = read_at(&t);
        assert_eq!(r.hostile, None);
        assert!(r.certs.iter().all(|c| c.rotates == Some(true)), "{r:?}");

        // The 56 KB file of issue 25: one anchor of 16,000 scalars.
        let mut bomb = format!(
            "rotateCertificates: true\nx: &a [{}]\ny: [",
            ["a"; 16_000].join(",")
        );
        bomb.push_str(&["*a"; 6000].join(", "));
        bomb.push_str("]\n");
        std::fs::write(t.path().join(KUBELET_CONFIG), &bomb).unwrap();
        let r = read_at(&t);
        assert_eq!(
            r.hostile.as_deref(),
            Some("/var/lib/kubelet/config.yaml is hostile YAML (more than 100000 nodes); refusing to read it")
        );
        assert!(r.certs.iter().all(|c| c.rotates.is_none()), "{r:?}");
        // Over the size cap: hostile too.
        std::fs::write(
            t.path().join(KUBELET_CONFIG),
            vec![b'#'; CONFIG_MAX as usize + 1],
        )
        .unwrap();
        assert!(read_at(&t)
            .hostile
            .is_some_and(|h| h.contains("is larger than 262144 bytes")));
        // Merely not YAML: not hostile (the flags are unknown, as before).
        std::fs::write(t.path().join(KUBELET_CONFIG), b"rotateCertificates: [").unwrap();
        assert_eq!(read_at(&t).hostile, None);
    }
}
