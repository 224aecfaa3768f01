//! `kubeadm certs renew all [--config F] --rootfs R`: renews every kubeadm
//! leaf certificate under R like kubeadm does (a new key of the old key's
//! algorithm; same subject, SANs and usages; signed by the same CA), using
//! the openssl CLI. Refuses to run without `--rootfs` (except on an e2e
//! node, sim.json `kubeadm.allowHostRoot`).
//!
//! Also: `kubeadm certs renew <name>...` for single certificates and
//! `kubeadm version [-o short|json]`.

use crate::sim::{self, Sim, SimConfig};
use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use x509_parser::extensions::{GeneralName, ParsedExtension};

const OPENSSL: &str = "/usr/bin/openssl";
const VERSION: &str = "v1.31.0";

/// What kubeadm renews, in its order (alphabetical by name).
#[derive(Clone, Copy)]
enum Item {
    /// A PEM leaf: file base name under the cert dir, CA base name.
    Pem {
        base: &'static str,
        ca: &'static str,
    },
    /// A kubeconfig under the kubeconfig dir, client cert signed by `ca`.
    Kubeconfig { file: &'static str },
}

struct Renewable {
    name: &'static str,
    what: &'static str,
    item: Item,
}

const ITEMS: &[Renewable] = &[
    Renewable {
        name: "admin.conf",
        what: "certificate embedded in the kubeconfig file for the admin to use and for kubeadm itself",
        item: Item::Kubeconfig { file: "admin.conf" },
    },
    Renewable {
        name: "apiserver",
        what: "certificate for serving the Kubernetes API",
        item: Item::Pem {
            base: "apiserver",
            ca: "ca",
        },
    },
    Renewable {
        name: "apiserver-etcd-client",
        what: "certificate the apiserver uses to access etcd",
        item: Item::Pem {
            base: "apiserver-etcd-client",
            ca: "etcd/ca",
        },
    },
    Renewable {
        name: "apiserver-kubelet-client",
        what: "certificate for the API server to connect to kubelet",
        item: Item::Pem {
            base: "apiserver-kubelet-client",
            ca: "ca",
        },
    },
    Renewable {
        name: "controller-manager.conf",
        what: "certificate embedded in the kubeconfig file for the controller manager to use",
        item: Item::Kubeconfig {
            file: "controller-manager.conf",
        },
    },
    Renewable {
        name: "etcd-healthcheck-client",
        what: "certificate for liveness probes to healthcheck etcd",
        item: Item::Pem {
            base: "etcd/healthcheck-client",
            ca: "etcd/ca",
        },
    },
    Renewable {
        name: "etcd-peer",
        what: "certificate for etcd nodes to communicate with each other",
        item: Item::Pem {
            base: "etcd/peer",
            ca: "etcd/ca",
        },
    },
    Renewable {
        name: "etcd-server",
        what: "certificate for serving etcd",
        item: Item::Pem {
            base: "etcd/server",
            ca: "etcd/ca",
        },
    },
    Renewable {
        name: "front-proxy-client",
        what: "certificate for the front proxy client",
        item: Item::Pem {
            base: "front-proxy-client",
            ca: "front-proxy-ca",
        },
    },
    Renewable {
        name: "scheduler.conf",
        what: "certificate embedded in the kubeconfig file for the scheduler manager to use",
        item: Item::Kubeconfig {
            file: "scheduler.conf",
        },
    },
    Renewable {
        name: "super-admin.conf",
        what: "certificate embedded in the kubeconfig file for the super-admin",
        item: Item::Kubeconfig {
            file: "super-admin.conf",
        },
    },
];

/// How many PEM leaves `failHalfway` renews before failing (7 / 2).
const HALFWAY_PEM_LEAVES: usize = 3;

pub fn main(sim: Option<Sim>, args: &[String]) -> i32 {
    let sim = match sim {
        Some(s) => s,
        None => {
            eprintln!("kubeadm (simnode): cannot find the simulation directory");
            return 1;
        }
    };
    sim.append_log("kubeadm.log", &args.join(" "));
    let cfg = match sim.load_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kubeadm (simnode): {e:#}");
            return 1;
        }
    };
    match run(&sim, &cfg, args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e:#}\nTo see the stack trace of this error execute with --v=5 or higher");
            1
        }
    }
}

#[derive(Default)]
struct Flags {
    rootfs: Option<String>,
    config: Option<String>,
    cert_dir: Option<String>,
    kubeconfig_dir: Option<String>,
    output: Option<String>,
    positional: Vec<String>,
}

fn parse_flags(args: &[String]) -> Result<Flags> {
    let mut f = Flags::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            f.positional.extend(it.by_ref().cloned());
            break;
        }
        if !a.starts_with('-') || a == "-" {
            f.positional.push(a.clone());
            continue;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let mut value = || -> Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| anyhow!("flag needs an argument: {name}")),
            }
        };
        match name {
            "--rootfs" => f.rootfs = Some(value()?),
            "--config" => f.config = Some(value()?),
            "--cert-dir" => f.cert_dir = Some(value()?),
            "--kubeconfig-dir" => f.kubeconfig_dir = Some(value()?),
            "--kubeconfig" => {
                value()?;
            }
            "-v" | "--v" => {
                value()?;
            }
            "-o" | "--output" => f.output = Some(value()?),
            "--skip-headers" | "--skip-log-headers" => {}
            _ => bail!("unknown flag: {name}"),
        }
    }
    Ok(f)
}

fn run(sim: &Sim, cfg: &SimConfig, args: &[String]) -> Result<i32> {
    let flags = parse_flags(args)?;
    let pos: Vec<&str> = flags.positional.iter().map(String::as_str).collect();
    if pos.first() == Some(&"version") {
        match flags.output.as_deref() {
            Some("short") => println!("{VERSION}"),
            Some("json") => println!(
                "{{\n  \"clientVersion\": {{\n    \"major\": \"1\",\n    \"minor\": \"31\",\n    \"gitVersion\": \"{VERSION}\"\n  }}\n}}"
            ),
            _ => println!("kubeadm version: &version.Info{{Major:\"1\", Minor:\"31\", GitVersion:\"{VERSION}\"}}"),
        }
        return Ok(0);
    }
    if pos.len() < 3 || pos[0] != "certs" || pos[1] != "renew" {
        bail!(
            "nvke-simnode kubeadm supports only `certs renew all|<name>...` and `version`, not: {}",
            args.join(" ")
        );
    }
    let selected: Vec<&Renewable> = if pos[2..] == ["all"] {
        ITEMS.iter().collect()
    } else {
        pos[2..]
            .iter()
            .map(|n| {
                ITEMS
                    .iter()
                    .find(|i| i.name == *n)
                    .ok_or_else(|| anyhow!("unknown certificate name: {n}"))
            })
            .collect::<Result<_>>()?
    };

    if cfg.kubeadm.hang_secs > 0 {
        std::thread::sleep(std::time::Duration::from_secs(cfg.kubeadm.hang_secs));
    }

    let sim_root = sim.root(cfg);
    let root = match flags.rootfs.as_deref() {
        // e2e: the runbook runs with `--root /` inside a node's own mount
        // namespace, so kubeadm is called without --rootfs, as on a real node.
        None if cfg.kubeadm.allow_host_root
            && sim_root == Path::new("/")
            && Path::new(sim::E2E_NODE_MARKER).is_file() =>
        {
            PathBuf::from("/")
        }
        None => bail!("nvke-simnode kubeadm: refusing to run without --rootfs: the simulated kubeadm never touches the host's /etc/kubernetes"),
        Some(rootfs) => {
            let root = PathBuf::from(rootfs);
            if !root.is_absolute() || !root.is_dir() {
                bail!("--rootfs {rootfs}: not an absolute path to a directory");
            }
            if root
                .canonicalize()
                .map(|p| p == Path::new("/"))
                .unwrap_or(true)
            {
                bail!("nvke-simnode kubeadm: refusing --rootfs {rootfs}: that is the host");
            }
            root
        }
    };
    if sim_root.canonicalize().ok() != root.canonicalize().ok() {
        eprintln!(
            "W nvke-simnode kubeadm: --rootfs {} is not the simulation root {}",
            root.display(),
            sim_root.display()
        );
    }

    let mut cert_dir = flags
        .cert_dir
        .clone()
        .unwrap_or_else(|| "/etc/kubernetes/pki".to_string());
    match &flags.config {
        Some(c) => {
            let path = sim::under_root(&root, c);
            let bytes = std::fs::read(&path)
                .map_err(|e| anyhow!("config not found: {c} ({}: {e})", path.display()))?;
            if let Some(d) = certificates_dir(&bytes)
                .with_context(|| format!("unable to read config from {c:?}"))?
            {
                cert_dir = d;
            }
        }
        None => {
            // kubeadm's getInternalCfg: without --config it reads the
            // kubeadm-config ConfigMap through admin.conf; when the API
            // cannot be reached it says so and renews with its defaults (the
            // SANs and names come from the existing certificates either way).
            println!("[renew] Reading configuration from the cluster...");
            println!("[renew] FYI: You can look at this config file with 'kubectl -n kube-system get cm kubeadm-config -o yaml'");
            match api_unreachable(&root, cfg) {
                Some(why) => {
                    sim.append_log("kubeadm.log", &format!("# the API is unreachable: {why}"));
                    println!("[renew] Error reading configuration from the Cluster. Falling back to default configuration");
                    println!();
                }
                None => println!(),
            }
        }
    }
    // Chrooted into --rootfs, as kubeadm is: a symlinked pki/ (kubespray's
    // `pki -> ssl`, relative or absolute) is followed inside the root.
    let pki = sim::chrooted(&root, &cert_dir)?;
    let kubeconfig_dir = sim::chrooted(
        &root,
        flags.kubeconfig_dir.as_deref().unwrap_or("/etc/kubernetes"),
    )?;

    let work = TempDir::new()?;
    prefill_keys(&work, &planned_algs(&selected, &pki, &kubeconfig_dir));
    let mut pem_done = 0;
    for r in selected {
        if cfg.kubeadm.skip.iter().any(|s| s == r.name) {
            // kubeadm's words for a leaf whose CA key it does not have
            // (phases/certs renewal: "Detected external %s, %s can't be
            // renewed"): the leaf stays as it was.
            let ca = match r.item {
                Item::Pem { ca, .. } => ca,
                Item::Kubeconfig { .. } => "ca",
            };
            println!("Detected external {ca}, {} can't be renewed", r.what);
            continue;
        }
        let twist = Twist::of(cfg, r.name);
        if cfg.kubeadm.fail_halfway
            && pem_done == HALFWAY_PEM_LEAVES
            && matches!(r.item, Item::Pem { .. })
        {
            bail!(
                "failed to renew certificate {}: simulated failure (sim.json kubeadm.failHalfway)",
                r.name
            );
        }
        match r.item {
            Item::Pem { base, ca } => {
                let crt = pki.join(format!("{base}.crt"));
                let key = pki.join(format!("{base}.key"));
                if !crt.exists() {
                    println!("MISSING! {}", r.what);
                    continue;
                }
                let (ca_crt, ca_key) = ca_pair(&pki, ca)?;
                let old = std::fs::read(&crt)
                    .with_context(|| format!("failed to read {}", crt.display()))?;
                let (new_crt, new_key) = renew_cert(&work, &old, &ca_crt, &ca_key, twist)
                    .with_context(|| format!("failed to renew certificate {}", r.name))?;
                sim::write_atomic(&key, &new_key, 0o600)?;
                sim::write_atomic(&crt, &new_crt, 0o644)?;
                pem_done += 1;
            }
            Item::Kubeconfig { file } => {
                let path = kubeconfig_dir.join(file);
                if !path.exists() {
                    println!("MISSING! {}", r.what);
                    continue;
                }
                let (ca_crt, ca_key) = ca_pair(&pki, "ca")?;
                renew_kubeconfig(&work, &path, &ca_crt, &ca_key, twist)
                    .with_context(|| format!("failed to renew certificate {}", r.name))?;
            }
        }
        println!("{} renewed", r.what);
    }

    if cfg.kubeadm.change_ca {
        let (ca_crt, ca_key) = ca_pair(&pki, "ca")?;
        let old = std::fs::read(&ca_crt)?;
        let (crt, key) = new_self_signed_ca(&work, &old)?;
        sim::write_atomic(&ca_key, &key, 0o600)?;
        sim::write_atomic(&ca_crt, &crt, 0o644)?;
    }
    if cfg.kubeadm.key_mismatch {
        let crt = std::fs::read(pki.join("apiserver.crt"))?;
        let alg = key_alg(&crt)?;
        let key = gen_key(&work, &alg)?;
        sim::write_atomic(&pki.join("apiserver.key"), &key, 0o600)?;
    }
    println!();
    println!("Done renewing certificates. You must restart the kube-apiserver, kube-controller-manager, kube-scheduler and etcd, so that they can use the new certificates.");
    Ok(0)
}

/// `certificatesDir` of a ClusterConfiguration in the (multi-document)
/// kubeadm config, if any. The config must be YAML.
fn certificates_dir(bytes: &[u8]) -> Result<Option<String>> {
    let mut dir = None;
    for doc in serde_yaml::Deserializer::from_slice(bytes) {
        let v = <serde_yaml::Value as serde::Deserialize>::deserialize(doc)?;
        if v.get("kind").and_then(|k| k.as_str()) == Some("ClusterConfiguration") {
            if let Some(d) = v.get("certificatesDir").and_then(|d| d.as_str()) {
                dir = Some(d.to_string());
            }
        }
    }
    Ok(dir)
}

fn ca_pair(pki: &Path, ca: &str) -> Result<(PathBuf, PathBuf)> {
    let crt = pki.join(format!("{ca}.crt"));
    let key = pki.join(format!("{ca}.key"));
    if !crt.exists() {
        bail!(
            "couldn't load CA certificate {ca}: {} not found",
            crt.display()
        );
    }
    if !key.exists() {
        bail!(
            "certificate authority {ca} has no private key {} (external CA mode is not supported)",
            key.display()
        );
    }
    Ok((crt, key))
}

// ------------------------------------------------------------ openssl

struct TempDir {
    path: PathBuf,
    n: std::sync::atomic::AtomicU32,
    /// Keys generated ahead of time, in parallel (RSA key generation is the
    /// slow part of a renewal).
    pool: std::sync::Mutex<Vec<(KeyAlg, Vec<u8>)>>,
}

impl TempDir {
    fn new() -> Result<TempDir> {
        let path =
            std::env::temp_dir().join(format!("nvke-simnode-kubeadm-{}", sim::random_hex(8)));
        std::fs::create_dir(&path)
            .with_context(|| format!("failed to create {}", path.display()))?;
        Ok(TempDir {
            path,
            n: std::sync::atomic::AtomicU32::new(0),
            pool: std::sync::Mutex::new(Vec::new()),
        })
    }
    fn file(&self, name: &str) -> PathBuf {
        let n = self.n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.path.join(format!("{n}-{name}"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn openssl(args: &[&str]) -> Result<()> {
    let out = Command::new(OPENSSL)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("failed to run {OPENSSL}"))?;
    if !out.status.success() {
        bail!(
            "openssl {} failed: {}",
            args.first().unwrap_or(&""),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq)]
enum KeyAlg {
    Rsa(usize),
    Ec(&'static str),
}

fn parse_pem_cert(pem: &[u8]) -> Result<x509_parser::pem::Pem> {
    let (_, p) =
        x509_parser::pem::parse_x509_pem(pem).map_err(|e| anyhow!("not a PEM certificate: {e}"))?;
    Ok(p)
}

fn key_alg(cert_pem: &[u8]) -> Result<KeyAlg> {
    let p = parse_pem_cert(cert_pem)?;
    let cert = p
        .parse_x509()
        .map_err(|e| anyhow!("bad certificate: {e}"))?;
    match cert.public_key().parsed() {
        Ok(x509_parser::public_key::PublicKey::RSA(rsa)) => {
            let bits = rsa.key_size();
            Ok(KeyAlg::Rsa(if [2048, 3072, 4096].contains(&bits) {
                bits
            } else {
                2048
            }))
        }
        Ok(x509_parser::public_key::PublicKey::EC(ec)) => Ok(KeyAlg::Ec(match ec.key_size() {
            0..=256 => "prime256v1",
            257..=384 => "secp384r1",
            _ => "secp521r1",
        })),
        Ok(_) => bail!("unsupported public key algorithm"),
        Err(e) => bail!("bad public key: {e}"),
    }
}

/// A new private key: PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC PRIVATE KEY`.
fn gen_key(work: &TempDir, alg: &KeyAlg) -> Result<Vec<u8>> {
    {
        let mut pool = work.pool.lock().expect("key pool");
        if let Some(i) = pool.iter().position(|(a, _)| a == alg) {
            return Ok(pool.swap_remove(i).1);
        }
    }
    gen_key_now(work, alg)
}

/// Generates one key per entry of `algs`, on a few threads, into the pool.
fn prefill_keys(work: &TempDir, algs: &[KeyAlg]) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 4);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(alg) = algs.get(i) else { break };
                if let Ok(key) = gen_key_now(work, alg) {
                    work.pool.lock().expect("key pool").push((alg.clone(), key));
                }
            });
        }
    });
}

/// The key algorithms of the certificates a renewal will replace.
fn planned_algs(items: &[&Renewable], pki: &Path, kubeconfig_dir: &Path) -> Vec<KeyAlg> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut algs = Vec::new();
    for r in items {
        match r.item {
            Item::Pem { base, .. } => {
                if let Ok(pem) = std::fs::read(pki.join(format!("{base}.crt"))) {
                    algs.extend(key_alg(&pem).ok());
                }
            }
            Item::Kubeconfig { file } => {
                let Ok(bytes) = std::fs::read(kubeconfig_dir.join(file)) else {
                    continue;
                };
                let Ok(doc) = serde_yaml::from_slice::<serde_yaml::Value>(&bytes) else {
                    continue;
                };
                for u in doc
                    .get("users")
                    .and_then(|u| u.as_sequence())
                    .into_iter()
                    .flatten()
                {
                    if let Some(d) = u
                        .get("user")
                        .and_then(|u| u.get("client-certificate-data"))
                        .and_then(|d| d.as_str())
                    {
                        if let Ok(pem) = b64.decode(d.trim()) {
                            algs.extend(key_alg(&pem).ok());
                        }
                    }
                }
            }
        }
    }
    algs
}

fn gen_key_now(work: &TempDir, alg: &KeyAlg) -> Result<Vec<u8>> {
    let out = work.file("key.pem");
    let o = out.to_str().context("temp path")?;
    match alg {
        KeyAlg::Rsa(bits) => openssl(&["genrsa", "-traditional", "-out", o, &bits.to_string()])?,
        KeyAlg::Ec(curve) => openssl(&["ecparam", "-name", curve, "-genkey", "-noout", "-out", o])?,
    }
    Ok(std::fs::read(&out)?)
}

/// Why kubeadm could not read the cluster's configuration through the
/// local API, as the simulated node stands (None: it could): an expired
/// `apiserver.crt` (the client refuses the server) or `admin.conf` client
/// certificate (the server refuses the client), judged at `tlsNow` like the
/// TLS stand-ins (else the real clock).
fn api_unreachable(root: &Path, cfg: &SimConfig) -> Option<String> {
    let now = cfg
        .tls_now_unix()
        .ok()
        .flatten()
        .unwrap_or_else(|| ::time::OffsetDateTime::now_utc().unix_timestamp());
    let expired = |pem: &[u8]| -> Option<i64> {
        let p = parse_pem_cert(pem).ok()?;
        let cert = p.parse_x509().ok()?;
        let not_after = cert.validity().not_after.timestamp();
        (not_after < now).then_some(not_after)
    };
    let server =
        std::fs::read(sim::chrooted(root, "/etc/kubernetes/pki/apiserver.crt").ok()?).ok()?;
    if let Some(t) = expired(&server) {
        return Some(format!("apiserver.crt expired at unix {t}"));
    }
    let admin = std::fs::read(sim::under_root(root, "/etc/kubernetes/admin.conf")).ok()?;
    let doc = serde_yaml::from_slice::<serde_yaml::Value>(&admin).ok()?;
    let data = doc
        .get("users")?
        .as_sequence()?
        .first()?
        .get("user")?
        .get("client-certificate-data")?
        .as_str()?;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()?;
    expired(&pem).map(|t| format!("admin.conf's client certificate expired at unix {t}"))
}

/// An openssl `[ ext ]` section reproducing the old certificate's usages
/// and SANs (key identifiers are recomputed by openssl).
fn ext_section(cert_pem: &[u8]) -> Result<String> {
    let p = parse_pem_cert(cert_pem)?;
    let cert = p
        .parse_x509()
        .map_err(|e| anyhow!("bad certificate: {e}"))?;
    let mut s = String::from("[ ext ]\n");
    let mut has_ski = false;
    let mut has_aki = false;
    for ext in cert.extensions() {
        let crit = if ext.critical { "critical, " } else { "" };
        match ext.parsed_extension() {
            ParsedExtension::BasicConstraints(bc) => {
                let mut v = format!("{crit}CA:{}", if bc.ca { "TRUE" } else { "FALSE" });
                if let Some(n) = bc.path_len_constraint {
                    let _ = write!(v, ", pathlen:{n}");
                }
                let _ = writeln!(s, "basicConstraints = {v}");
            }
            ParsedExtension::KeyUsage(ku) => {
                let names: Vec<&str> = [
                    (ku.digital_signature(), "digitalSignature"),
                    (ku.non_repudiation(), "nonRepudiation"),
                    (ku.key_encipherment(), "keyEncipherment"),
                    (ku.data_encipherment(), "dataEncipherment"),
                    (ku.key_agreement(), "keyAgreement"),
                    (ku.key_cert_sign(), "keyCertSign"),
                    (ku.crl_sign(), "cRLSign"),
                    (ku.encipher_only(), "encipherOnly"),
                    (ku.decipher_only(), "decipherOnly"),
                ]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, n)| *n)
                .collect();
                if !names.is_empty() {
                    let _ = writeln!(s, "keyUsage = {crit}{}", names.join(", "));
                }
            }
            ParsedExtension::ExtendedKeyUsage(eku) => {
                let mut names: Vec<String> = [
                    (eku.any, "anyExtendedKeyUsage"),
                    (eku.server_auth, "serverAuth"),
                    (eku.client_auth, "clientAuth"),
                    (eku.code_signing, "codeSigning"),
                    (eku.email_protection, "emailProtection"),
                    (eku.time_stamping, "timeStamping"),
                    (eku.ocsp_signing, "OCSPSigning"),
                ]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, n)| n.to_string())
                .collect();
                names.extend(eku.other.iter().map(|o| o.to_id_string()));
                if !names.is_empty() {
                    let _ = writeln!(s, "extendedKeyUsage = {crit}{}", names.join(", "));
                }
            }
            ParsedExtension::SubjectAlternativeName(san) => {
                let mut names = Vec::new();
                for gn in &san.general_names {
                    match gn {
                        GeneralName::DNSName(d) => names.push(format!("DNS:{d}")),
                        GeneralName::RFC822Name(e) => names.push(format!("email:{e}")),
                        GeneralName::URI(u) => names.push(format!("URI:{u}")),
                        GeneralName::IPAddress(b) => names.push(format!("IP:{}", ip_text(b)?)),
                        other => bail!("unsupported subjectAltName entry {other:?}"),
                    }
                }
                if !names.is_empty() {
                    let _ = writeln!(s, "subjectAltName = {crit}{}", names.join(", "));
                }
            }
            ParsedExtension::SubjectKeyIdentifier(_) => has_ski = true,
            ParsedExtension::AuthorityKeyIdentifier(_) => has_aki = true,
            _ => {}
        }
    }
    let _ = writeln!(
        s,
        "subjectKeyIdentifier = {}",
        if has_ski { "hash" } else { "none" }
    );
    let _ = writeln!(
        s,
        "authorityKeyIdentifier = {}",
        if has_aki { "keyid" } else { "none" }
    );
    Ok(s)
}

fn ip_text(b: &[u8]) -> Result<String> {
    match b.len() {
        4 => Ok(std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string()),
        16 => {
            let segs: Vec<String> = b
                .chunks(2)
                .map(|c| format!("{:x}", u16::from_be_bytes([c[0], c[1]])))
                .collect();
            Ok(segs.join(":"))
        }
        n => bail!("IP address SAN of {n} bytes"),
    }
}

/// `openssl ca` configuration with a throwaway database in `work`.
fn ca_config(work: &TempDir, ext: &str) -> Result<PathBuf> {
    let db = work.file("db");
    std::fs::create_dir_all(db.join("new"))?;
    std::fs::write(db.join("index.txt"), "")?;
    std::fs::write(db.join("index.txt.attr"), "unique_subject = no\n")?;
    std::fs::write(db.join("serial"), "01\n")?;
    let cnf = db.join("openssl.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[ ca ]\ndefault_ca = CA_default\n\n[ CA_default ]\ndir = {}\ndatabase = $dir/index.txt\nnew_certs_dir = $dir/new\nserial = $dir/serial\ndefault_md = sha256\npolicy = policy_any\nunique_subject = no\nemail_in_dn = no\ncopy_extensions = none\n\n[ policy_any ]\ncommonName = optional\n\n{ext}",
            db.display()
        ),
    )?;
    Ok(cnf)
}

fn asn1_time(t: ::time::OffsetDateTime) -> String {
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// What a renewal changes of a leaf besides its key, serial and dates
/// (sim.json `kubeadm.dropSans`, `kubeadm.changeSubject`,
/// `kubeadm.notBeforeAheadSecs`): nothing by default, as kubeadm renews.
#[derive(Default, Clone, Copy)]
struct Twist<'a> {
    drop_sans: &'a [String],
    subject: Option<&'a str>,
    /// Valid from now + this many seconds (a clock ahead).
    ahead_secs: u64,
}

impl<'a> Twist<'a> {
    fn of(cfg: &'a SimConfig, name: &str) -> Twist<'a> {
        Twist {
            drop_sans: cfg
                .kubeadm
                .drop_sans
                .get(name)
                .map(Vec::as_slice)
                .unwrap_or_default(),
            subject: cfg.kubeadm.change_subject.get(name).map(String::as_str),
            ahead_secs: cfg.kubeadm.not_before_ahead_secs,
        }
    }

    /// The extension section without the SANs dropped.
    fn ext(&self, ext: String) -> String {
        if self.drop_sans.is_empty() {
            return ext;
        }
        ext.lines()
            .filter_map(|l| match l.strip_prefix("subjectAltName = ") {
                Some(v) => {
                    let (crit, names) = match v.strip_prefix("critical, ") {
                        Some(n) => ("critical, ", n),
                        None => ("", v),
                    };
                    let kept: Vec<&str> = names
                        .split(", ")
                        .filter(|n| !self.drop_sans.iter().any(|d| d == n))
                        .collect();
                    // Every name dropped: no extension at all.
                    (!kept.is_empty())
                        .then(|| format!("subjectAltName = {crit}{}", kept.join(", ")))
                }
                None => Some(l.to_string()),
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    }
}

/// Signs a request carrying the old certificate's subject and `new_key`
/// with the CA (or self-signs with `new_key` when `ca` is None).
fn sign(
    work: &TempDir,
    old_cert: &[u8],
    new_key: &[u8],
    ca: Option<(&Path, &Path)>,
    days: i64,
    twist: Twist<'_>,
) -> Result<Vec<u8>> {
    let old_path = work.file("old.crt");
    std::fs::write(&old_path, old_cert)?;
    let key_path = work.file("new.key");
    std::fs::write(&key_path, new_key)?;
    let csr = work.file("req.csr");
    let s = |p: &Path| p.to_str().map(str::to_string).context("temp path");
    openssl(&[
        "x509",
        "-x509toreq",
        "-in",
        &s(&old_path)?,
        "-key",
        &s(&key_path)?,
        "-out",
        &s(&csr)?,
    ])?;
    let cnf = ca_config(work, &twist.ext(ext_section(old_cert)?))?;
    let now = ::time::OffsetDateTime::now_utc();
    // Like kubeadm's pkiutil.NewSignedCert: a leaf is valid from its CA's
    // notBefore (no clock-skew window) until now + validity. A new CA:
    // from now - 1 h.
    let not_before = match ca {
        Some((ca_crt, _)) => {
            let pem = std::fs::read(ca_crt)?;
            let p = parse_pem_cert(&pem)?;
            let cert = p
                .parse_x509()
                .map_err(|e| anyhow!("bad CA certificate: {e}"))?;
            let secs = cert.validity().not_before.timestamp();
            ::time::OffsetDateTime::from_unix_timestamp(secs)?.min(now)
        }
        None => now - ::time::Duration::hours(1),
    };
    let not_before = match twist.ahead_secs {
        0 => not_before,
        n => now + ::time::Duration::seconds(n as i64),
    };
    let start = asn1_time(not_before);
    let end = asn1_time(now + ::time::Duration::days(days));
    let out = work.file("new.crt");
    let mut args: Vec<String> = [
        "ca",
        "-config",
        &s(&cnf)?,
        "-batch",
        "-notext",
        "-rand_serial",
        "-preserveDN",
        "-in",
        &s(&csr)?,
        "-out",
        &s(&out)?,
        "-startdate",
        &start,
        "-enddate",
        &end,
        "-extensions",
        "ext",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    if let Some(subject) = twist.subject {
        args.extend(["-subj".to_string(), subject.to_string()]);
    }
    match ca {
        Some((ca_crt, ca_key)) => {
            args.extend([
                "-cert".to_string(),
                s(ca_crt)?,
                "-keyfile".to_string(),
                s(ca_key)?,
            ]);
        }
        None => {
            args.extend([
                "-selfsign".to_string(),
                "-keyfile".to_string(),
                s(&key_path)?,
            ]);
        }
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    openssl(&refs)?;
    Ok(std::fs::read(&out)?)
}

/// A renewed certificate and its new key, for the old certificate PEM.
fn renew_cert(
    work: &TempDir,
    old: &[u8],
    ca_crt: &Path,
    ca_key: &Path,
    twist: Twist<'_>,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let alg = key_alg(old)?;
    let key = gen_key(work, &alg)?;
    let crt = sign(work, old, &key, Some((ca_crt, ca_key)), 365, twist)?;
    Ok((crt, key))
}

fn new_self_signed_ca(work: &TempDir, old: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let alg = key_alg(old)?;
    let key = gen_key(work, &alg)?;
    let crt = sign(work, old, &key, None, 3650, Twist::default())?;
    Ok((crt, key))
}

fn renew_kubeconfig(
    work: &TempDir,
    path: &Path,
    ca_crt: &Path,
    ca_key: &Path,
    twist: Twist<'_>,
) -> Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let bytes =
        std::fs::read(path).with_context(|| format!("failed to read {}", path.display()))?;
    let mut doc: serde_yaml::Value = serde_yaml::from_slice(&bytes)
        .with_context(|| format!("failed to parse {}", path.display()))?;
    let users = doc
        .get_mut("users")
        .and_then(|u| u.as_sequence_mut())
        .with_context(|| format!("{}: no users", path.display()))?;
    let mut renewed = 0;
    for u in users.iter_mut() {
        let Some(user) = u.get_mut("user").and_then(|u| u.as_mapping_mut()) else {
            continue;
        };
        let Some(data) = user
            .get("client-certificate-data")
            .and_then(|d| d.as_str())
            .map(str::to_string)
        else {
            continue;
        };
        let old = b64
            .decode(data.trim())
            .context("client-certificate-data is not base64")?;
        let (crt, key) = renew_cert(work, &old, ca_crt, ca_key, twist)?;
        user.insert(
            "client-certificate-data".into(),
            serde_yaml::Value::String(b64.encode(&crt)),
        );
        user.insert(
            "client-key-data".into(),
            serde_yaml::Value::String(b64.encode(&key)),
        );
        renewed += 1;
    }
    if renewed == 0 {
        bail!("{}: no embedded client certificate", path.display());
    }
    let out = serde_yaml::to_string(&doc)?;
    sim::write_atomic(path, out.as_bytes(), 0o600)
}
