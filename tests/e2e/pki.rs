//! Per-node PKI for the e2e cluster, made at test time with the openssl CLI
//! from the committed fixture CAs (`fixtures/nodes/rsa`): every node of a
//! cluster shares the three CAs (so the CA fingerprints are the fixture's),
//! and gets its own leaves with its own name and IP (etcd server and peer,
//! kube-apiserver) and its own kubeconfigs. The leaf keys are the fixture's
//! (no key generation: fast); the leaves are valid from now for
//! [`LEAF_DAYS`] days, inside the default 30-day threshold, so a scheduled
//! (non-forced) cycle finds every node due, and the test never rots with the
//! real clock (real etcd checks real time).

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Validity of the test-time leaves: due under the default 30-day threshold.
pub const LEAF_DAYS: u32 = 20;
/// Validity of the leaves of a node that is not due (a scheduled cycle
/// records it `unchanged`).
pub const NOT_DUE_DAYS: u32 = 200;
/// The first service IP (kubeadm's default service CIDR 10.96.0.0/12).
const SERVICE_IP: &str = "10.96.0.1";

/// The lab network's address family: IPv4 (`10.0.0.0/24`) or IPv6
/// single-stack (`fd00:10::/64`, SPEC 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// The bridge's address with its prefix length.
    pub fn gateway(self) -> &'static str {
        match self {
            Family::V4 => "10.0.0.1/24",
            Family::V6 => "fd00:10::1/64",
        }
    }
}

#[derive(Debug, Clone)]
pub struct NodeId {
    /// 1-based.
    pub index: usize,
    pub name: String,
    pub ip: String,
    pub family: Family,
}

impl NodeId {
    pub fn new(index: usize, family: Family) -> NodeId {
        NodeId {
            index,
            name: format!("cp-{index}"),
            ip: match family {
                Family::V4 => format!("10.0.0.{}", 10 + index),
                Family::V6 => format!("fd00:10::{}", 10 + index),
            },
            family,
        }
    }

    /// The address as a URL's host: IPv6 in brackets.
    pub fn url_host(&self) -> String {
        match self.family {
            Family::V4 => self.ip.clone(),
            Family::V6 => format!("[{}]", self.ip),
        }
    }

    /// The address with its prefix length, for `ip addr add`.
    pub fn cidr(&self) -> String {
        match self.family {
            Family::V4 => format!("{}/24", self.ip),
            Family::V6 => format!("{}/64", self.ip),
        }
    }
}

/// Which committed fixture tree (and so which CAs and key algorithm) a
/// cluster derives from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// `fixtures/nodes/rsa`: RSA 2048, kubeadm's default. The simulated
    /// kubeadm then generates eleven RSA keys per renewal (seconds of CPU).
    Rsa,
    /// `fixtures/nodes/ecdsa`: ECDSA P-256; key generation is instant.
    Ecdsa,
}

impl Keys {
    pub fn name(self) -> &'static str {
        match self {
            Keys::Rsa => "rsa",
            Keys::Ecdsa => "ecdsa",
        }
    }
}

/// The committed fixture tree this PKI derives from.
pub fn fixture(keys: Keys) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/nodes")
        .join(keys.name())
        .join("etc/kubernetes")
}

fn chmod(p: &Path, mode: u32) -> Result<()> {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {}", p.display()))
}

pub fn run(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("failed to run {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[derive(Clone, Copy)]
enum Kind {
    Server,
    Client,
    /// serverAuth + clientAuth (etcd server and peer certificates).
    Peer,
}

/// Signs a certificate for `key` with the CA, valid from now for `days`.
#[allow(clippy::too_many_arguments)]
fn sign(
    work: &Path,
    ca_crt: &Path,
    ca_key: &Path,
    key: &Path,
    subj: &str,
    kind: Kind,
    sans: &str,
    rsa: bool,
    days: u32,
    out: &Path,
) -> Result<()> {
    let ku = if rsa {
        "critical, digitalSignature, keyEncipherment"
    } else {
        "critical, digitalSignature"
    };
    let eku = match kind {
        Kind::Server => "serverAuth",
        Kind::Client => "clientAuth",
        Kind::Peer => "serverAuth, clientAuth",
    };
    let mut cnf = format!(
        "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = placeholder\n[ext]\n\
         basicConstraints = critical, CA:FALSE\nkeyUsage = {ku}\nextendedKeyUsage = {eku}\n\
         authorityKeyIdentifier = keyid\n"
    );
    if !sans.is_empty() {
        cnf.push_str(&format!("subjectAltName = {sans}\n"));
    }
    let cnf_path = work.join(format!(
        "sign-{}.cnf",
        out.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&cnf_path, cnf)?;
    let serial: String = {
        let mut b = [0u8; 8];
        std::fs::File::open("/dev/urandom").and_then(|mut f| {
            use std::io::Read;
            f.read_exact(&mut b)
        })?;
        crate::support::hex::hex(&b)
    };
    run(Command::new("openssl")
        .args(["req", "-new", "-x509", "-sha256", "-config"])
        .arg(&cnf_path)
        .arg("-key")
        .arg(key)
        .arg("-CA")
        .arg(ca_crt)
        .arg("-CAkey")
        .arg(ca_key)
        .args(["-subj", subj, "-days", &days.to_string()])
        .args(["-set_serial", &format!("0x7{}", &serial[1..])])
        .args(["-extensions", "ext", "-out"])
        .arg(out))?;
    chmod(out, 0o644)
}

/// Writes the node's `/etc/kubernetes` into `dst`: the fixture CAs, fresh
/// leaves and kubeconfigs for `me`, and manifests rewritten for `me` in a
/// cluster of `cluster` (etcd `--initial-cluster` names all of them).
pub fn node_tree(
    keys: Keys,
    dst: &Path,
    me: &NodeId,
    cluster: &[NodeId],
    days: u32,
    work: &Path,
) -> Result<()> {
    crate::support::tree::try_copy_tree(&fixture(keys), dst)?;
    let rsa = keys == Keys::Rsa;
    let pki = dst.join("pki");
    let ca = (pki.join("ca.crt"), pki.join("ca.key"));
    let etcd_ca = (pki.join("etcd/ca.crt"), pki.join("etcd/ca.key"));
    let fp_ca = (
        pki.join("front-proxy-ca.crt"),
        pki.join("front-proxy-ca.key"),
    );
    let (name, ip) = (me.name.as_str(), me.ip.as_str());
    let api_sans = format!(
        "DNS:{name}, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, \
         DNS:kubernetes.default.svc.cluster.local, IP:{SERVICE_IP}, IP:{ip}, IP:127.0.0.1, \
         IP:0:0:0:0:0:0:0:1"
    );
    let etcd_sans = format!("DNS:localhost, DNS:{name}, IP:{ip}, IP:127.0.0.1, IP:0:0:0:0:0:0:0:1");
    let cn = format!("/CN={name}");
    // (leaf, its CA's certificate and key, subject, usage, SANs)
    type Leaf<'a> = (&'a str, &'a (PathBuf, PathBuf), &'a str, Kind, &'a str);
    let leaves: [Leaf; 7] = [
        (
            "apiserver",
            &ca,
            "/CN=kube-apiserver",
            Kind::Server,
            &api_sans,
        ),
        (
            "apiserver-kubelet-client",
            &ca,
            "/O=kubeadm:cluster-admins/CN=kube-apiserver-kubelet-client",
            Kind::Client,
            "",
        ),
        (
            "apiserver-etcd-client",
            &etcd_ca,
            "/CN=kube-apiserver-etcd-client",
            Kind::Client,
            "",
        ),
        (
            "front-proxy-client",
            &fp_ca,
            "/CN=front-proxy-client",
            Kind::Client,
            "",
        ),
        ("etcd/server", &etcd_ca, &cn, Kind::Peer, &etcd_sans),
        ("etcd/peer", &etcd_ca, &cn, Kind::Peer, &etcd_sans),
        (
            "etcd/healthcheck-client",
            &etcd_ca,
            "/CN=kube-etcd-healthcheck-client",
            Kind::Client,
            "",
        ),
    ];
    for (leaf, (ca_crt, ca_key), subj, kind, sans) in leaves {
        sign(
            work,
            ca_crt,
            ca_key,
            &pki.join(format!("{leaf}.key")),
            subj,
            kind,
            sans,
            rsa,
            days,
            &pki.join(format!("{leaf}.crt")),
        )?;
    }
    for (file, user, subj) in [
        (
            "admin.conf",
            "kubernetes-admin",
            "/O=kubeadm:cluster-admins/CN=kubernetes-admin",
        ),
        (
            "super-admin.conf",
            "kubernetes-super-admin",
            "/O=system:masters/CN=kubernetes-super-admin",
        ),
        (
            "controller-manager.conf",
            "system:kube-controller-manager",
            "/CN=system:kube-controller-manager",
        ),
        (
            "scheduler.conf",
            "system:kube-scheduler",
            "/CN=system:kube-scheduler",
        ),
    ] {
        kubeconfig(work, dst, &ca, file, user, subj, &me.url_host(), rsa, days)?;
    }
    rewrite_manifests(&dst.join("manifests"), me, cluster)?;
    // The marker the simulated kubeadm needs before it renews under `/`.
    std::fs::write(dst.join(".nvke-e2e-node"), format!("{name} {ip}\n"))?;
    Ok(())
}

/// A kubeadm-shaped kubeconfig with a fresh client certificate for the
/// fixture kubeconfig's own key.
#[allow(clippy::too_many_arguments)]
fn kubeconfig(
    work: &Path,
    dst: &Path,
    ca: &(PathBuf, PathBuf),
    file: &str,
    user: &str,
    subj: &str,
    ip: &str,
    rsa: bool,
    days: u32,
) -> Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let path = dst.join(file);
    let doc: serde_yaml::Value = serde_yaml::from_slice(&std::fs::read(&path)?)?;
    let key_b64 = doc["users"][0]["user"]["client-key-data"]
        .as_str()
        .with_context(|| format!("{file}: no client-key-data"))?;
    let key_pem = b64.decode(key_b64)?;
    let key = work.join(format!("{file}.key"));
    std::fs::write(&key, &key_pem)?;
    chmod(&key, 0o600)?;
    let crt = work.join(format!("{file}.crt"));
    sign(
        work,
        &ca.0,
        &ca.1,
        &key,
        subj,
        Kind::Client,
        "",
        rsa,
        days,
        &crt,
    )?;
    let ctx = format!("{user}@kubernetes");
    let yaml = format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca_data}\n    server: https://{ip}:6443\n  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n    user: {user}\n  name: {ctx}\ncurrent-context: {ctx}\nkind: Config\npreferences: {{}}\nusers:\n- name: {user}\n  user:\n    client-certificate-data: {crt_data}\n    client-key-data: {key_data}\n",
        ca_data = b64.encode(std::fs::read(&ca.0)?),
        crt_data = b64.encode(std::fs::read(&crt)?),
        key_data = b64.encode(&key_pem),
    );
    std::fs::write(&path, yaml)?;
    chmod(&path, 0o600)
}

/// kubeadm-style manifests for `me`: its name and IP everywhere, and an etcd
/// `--initial-cluster` naming every member, `--initial-cluster-state=new`,
/// `--pre-vote=true` (etcd 3.5's default, off in 3.4).
fn rewrite_manifests(dir: &Path, me: &NodeId, cluster: &[NodeId]) -> Result<()> {
    let initial = cluster
        .iter()
        .map(|n| format!("{}=https://{}:2380", n.name, n.url_host()))
        .collect::<Vec<_>>()
        .join(",");
    let etcd = std::fs::read_to_string(dir.join("etcd.yaml"))?;
    let mut out = String::new();
    let mut replaced = false;
    for line in etcd.lines() {
        if let Some(indent) = line.strip_suffix("--initial-cluster=cp-1=https://10.0.0.11:2380") {
            out.push_str(&format!("{indent}--initial-cluster={initial}\n"));
            out.push_str(&format!("{indent}--initial-cluster-state=new\n"));
            // etcd 3.5 (the manifest's image) pre-votes by default, 3.4 (the
            // Debian binary run here) does not: without it, a member that
            // rejoins after its restart can call an election and depose a
            // healthy leader, which 3.5 would not do.
            out.push_str(&format!("{indent}--pre-vote=true\n"));
            replaced = true;
        } else {
            out.push_str(&for_node(line, me).replace("cp-1", &me.name));
            out.push('\n');
        }
    }
    if !replaced {
        bail!("fixture etcd.yaml has no --initial-cluster line to rewrite");
    }
    std::fs::write(dir.join("etcd.yaml"), out)?;
    let api = std::fs::read_to_string(dir.join("kube-apiserver.yaml"))?;
    std::fs::write(dir.join("kube-apiserver.yaml"), for_node(&api, me))?;
    for f in ["kube-controller-manager.yaml", "kube-scheduler.yaml"] {
        let m = std::fs::read_to_string(dir.join(f))?;
        std::fs::write(dir.join(f), for_node(&m, me))?;
    }
    for f in [
        "etcd.yaml",
        "kube-apiserver.yaml",
        "kube-controller-manager.yaml",
        "kube-scheduler.yaml",
    ] {
        chmod(&dir.join(f), 0o644)?;
    }
    Ok(())
}

/// Manifest text of the fixture's node (10.0.0.11) for `me`, as kubeadm
/// writes it for its address family: the node's address in URLs (brackets
/// for IPv6), flags and probes; on an IPv6 single-stack node, loopback is
/// `::1` (etcd's client and metrics URLs, `--bind-address`, the probes).
fn for_node(text: &str, me: &NodeId) -> String {
    let t = text
        .replace("://10.0.0.11:", &format!("://{}:", me.url_host()))
        .replace("10.0.0.11", &me.ip);
    match me.family {
        Family::V4 => t,
        Family::V6 => t
            .replace("://127.0.0.1:", "://[::1]:")
            .replace("--bind-address=127.0.0.1", "--bind-address=::1")
            .replace("host: 127.0.0.1", "host: ::1"),
    }
}

/// The controller's own client identities (not node files): an etcd client
/// certificate from the etcd CA (for etcdctl and the write traffic) and a
/// kube-apiserver client certificate from the cluster CA (for `/readyz`).
pub struct ControllerPki {
    pub etcd_ca: PathBuf,
    pub etcd_cert: PathBuf,
    pub etcd_key: PathBuf,
    pub ca: PathBuf,
    pub api_cert: PathBuf,
    pub api_key: PathBuf,
}

pub fn controller_pki(keys: Keys, dir: &Path) -> Result<ControllerPki> {
    std::fs::create_dir_all(dir)?;
    let f = fixture(keys).join("pki");
    let p = ControllerPki {
        etcd_ca: dir.join("etcd-ca.crt"),
        etcd_cert: dir.join("etcd-client.crt"),
        etcd_key: dir.join("etcd-client.key"),
        ca: dir.join("ca.crt"),
        api_cert: dir.join("api-client.crt"),
        api_key: dir.join("api-client.key"),
    };
    std::fs::copy(f.join("etcd/ca.crt"), &p.etcd_ca)?;
    std::fs::copy(f.join("ca.crt"), &p.ca)?;
    for (key, crt, ca, subj) in [
        (
            &p.etcd_key,
            &p.etcd_cert,
            "etcd/ca",
            "/CN=nvke-e2e-controller",
        ),
        (
            &p.api_key,
            &p.api_cert,
            "ca",
            "/O=system:masters/CN=nvke-e2e-controller",
        ),
    ] {
        run(Command::new("openssl")
            .args([
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
            ])
            .arg(key))?;
        chmod(key, 0o600)?;
        sign(
            dir,
            &f.join(format!("{ca}.crt")),
            &f.join(format!("{ca}.key")),
            key,
            subj,
            Kind::Client,
            "",
            false,
            2,
            crt,
        )?;
    }
    Ok(p)
}

/// An ed25519 key pair from ssh-keygen (private key 0600, `.pub` beside it).
pub fn ssh_key(path: &Path, comment: &str) -> Result<String> {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path))?;
    Ok(std::fs::read_to_string(path.with_extension("pub"))?
        .trim()
        .to_string())
}
