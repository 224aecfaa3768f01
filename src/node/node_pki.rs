//! Reading the node's PKI: the three CAs (fingerprinted) and every leaf of
//! SPEC section 2, with expiry relative to a clock and a threshold.

use crate::contract;
use crate::node::backup;
use crate::node::fsx::{FsError, Root, Trust, NODE_FILE_MAX};
use crate::rules::clock;
use crate::rules::files::LeafRenewal;
use crate::rules::leaf_proof::{self, LeafFacts};
use crate::rules::pki::{self, CaId, KubeconfigCert, LeafKind, LeafSpec, ParsedCert};
use std::collections::BTreeMap;
use time::{Duration, OffsetDateTime};

#[derive(Debug, Clone)]
pub struct CaView {
    pub id: CaId,
    pub sha256: Option<String>,
    pub cert: Option<ParsedCert>,
    pub error: Option<String>,
}

/// `ok`, `skipped` (optional and missing: super-admin.conf before
/// Kubernetes 1.29), `error`.
pub use crate::contract::LeafStatus;

#[derive(Debug, Clone)]
pub struct LeafView {
    pub spec: LeafSpec,
    pub status: LeafStatus,
    pub cert: Option<ParsedCert>,
    /// None when the CA itself could not be read.
    pub chains_to_ca: Option<bool>,
    pub error: Option<String>,
}

/// Everything PKI the read-only modes report.
#[derive(Debug, Clone)]
pub struct PkiReport {
    pub cas: Vec<CaView>,
    pub leaves: Vec<LeafView>,
}

/// Read and fingerprint the three CA files.
pub fn read_cas(root: &Root) -> Vec<CaView> {
    CaId::ALL
        .iter()
        .map(|&id| {
            let path = id.cert_path();
            match root.read_file(&path, NODE_FILE_MAX, Trust::TypeOnly) {
                Ok(Some(bytes)) => {
                    let sha = pki::sha256_hex(&bytes);
                    match pki::parse_pem_certificate(&bytes) {
                        Ok(cert) => CaView {
                            id,
                            sha256: Some(sha),
                            cert: Some(cert),
                            error: None,
                        },
                        Err(e) => CaView {
                            id,
                            sha256: Some(sha),
                            cert: None,
                            error: Some(format!("{}: {e}", crate::node::paths::node(&path))),
                        },
                    }
                }
                Ok(None) => CaView {
                    id,
                    sha256: None,
                    cert: None,
                    error: Some(format!(
                        "{} does not exist",
                        crate::node::paths::node(&path)
                    )),
                },
                Err(e) => CaView {
                    id,
                    sha256: None,
                    cert: None,
                    error: Some(e.to_string()),
                },
            }
        })
        .collect()
}

/// The `caSHA256` map (only the CAs that could be read).
pub fn ca_fingerprints(cas: &[CaView]) -> BTreeMap<String, String> {
    cas.iter()
        .filter_map(|c| c.sha256.clone().map(|s| (c.id.key().to_string(), s)))
        .collect()
}

/// Why a leaf certificate was not read.
#[derive(Debug, thiserror::Error)]
enum LeafError {
    #[error(transparent)]
    Fs(#[from] FsError),
    /// `node`: the kubeconfig's node path; `file`: the file it names.
    #[error(
        "{node} names a client certificate file ({file}) instead of embedding it; kubeadm embeds it"
    )]
    FileNamed { node: String, file: String },
    #[error("{node}: {pki}")]
    Pki { node: String, pki: pki::PkiError },
}

fn read_leaf_cert(root: &Root, spec: &LeafSpec) -> Result<Option<ParsedCert>, LeafError> {
    leaf_cert_of(
        spec,
        root.read_file(spec.path, NODE_FILE_MAX, Trust::TypeOnly)?,
    )
}

/// A leaf's certificate from its file's bytes (None: no file).
fn leaf_cert_of(spec: &LeafSpec, bytes: Option<Vec<u8>>) -> Result<Option<ParsedCert>, LeafError> {
    let node = crate::node::paths::node(spec.path);
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    let pem = match spec.kind {
        LeafKind::Pem => bytes,
        LeafKind::Kubeconfig => match pki::kubeconfig_client_cert(&bytes) {
            Ok(KubeconfigCert::Embedded(pem)) => pem,
            Ok(KubeconfigCert::File(file)) => return Err(LeafError::FileNamed { node, file }),
            Err(pki) => return Err(LeafError::Pki { node, pki }),
        },
    };
    pki::parse_pem_certificate(&pem)
        .map(Some)
        .map_err(|pki| LeafError::Pki { node, pki })
}

/// Read every leaf; verify each against its CA when the CA was readable.
pub fn read_leaves(root: &Root, cas: &[CaView]) -> Vec<LeafView> {
    pki::LEAVES
        .iter()
        .map(|spec| match read_leaf_cert(root, spec) {
            Ok(Some(cert)) => {
                let ca = cas
                    .iter()
                    .find(|c| c.id == spec.ca)
                    .and_then(|c| c.cert.as_ref());
                let chains_to_ca = ca.map(|ca| pki::verify_signed_by(&cert, ca));
                LeafView {
                    spec: *spec,
                    status: LeafStatus::Ok,
                    cert: Some(cert),
                    chains_to_ca,
                    error: None,
                }
            }
            Ok(None) if spec.optional => LeafView {
                spec: *spec,
                status: LeafStatus::Skipped,
                cert: None,
                chains_to_ca: None,
                error: None,
            },
            Ok(None) => LeafView {
                spec: *spec,
                status: LeafStatus::Error,
                cert: None,
                chains_to_ca: None,
                error: Some(format!(
                    "{} does not exist",
                    crate::node::paths::node(spec.path)
                )),
            },
            Err(e) => LeafView {
                spec: *spec,
                status: LeafStatus::Error,
                cert: None,
                chains_to_ca: None,
                error: Some(e.to_string()),
            },
        })
        .collect()
}

pub fn read(root: &Root) -> PkiReport {
    let cas = read_cas(root);
    let leaves = read_leaves(root, &cas);
    PkiReport { cas, leaves }
}

/// Whether a certificate expiring at `not_after` is within the threshold.
pub fn within_threshold(
    now: OffsetDateTime,
    not_after: OffsetDateTime,
    threshold_days: u32,
) -> bool {
    // Near the end of time (`--now 9999-12-31T00:00:00Z`) the sum overflows:
    // everything expires before the end of time, so it is within.
    match now.checked_add(Duration::days(threshold_days as i64)) {
        Some(limit) => not_after <= limit,
        None => true,
    }
}

/// kubeadm's name of a CA, as the contract spells it.
fn ca_name(id: CaId) -> contract::CaName {
    match id {
        CaId::Kubernetes => contract::CaName::Ca,
        CaId::Etcd => contract::CaName::EtcdCa,
        CaId::FrontProxy => contract::CaName::FrontProxyCa,
    }
}

/// kubeadm's name of a leaf, as the contract spells it (every name of
/// `pki::LEAVES` is one: see the tests).
fn leaf_name(spec: &LeafSpec) -> Option<contract::LeafName> {
    contract::by_name(spec.name)
}

impl PkiReport {
    /// The leaves as the read-only modes print them.
    pub fn certificates(
        &self,
        now: OffsetDateTime,
        threshold: u32,
    ) -> Vec<contract::CertificateView> {
        self.leaves
            .iter()
            .filter_map(|l| {
                Some(contract::CertificateView {
                    name: leaf_name(&l.spec)?,
                    path: crate::node::paths::node(l.spec.path),
                    status: l.status,
                    ca: ca_name(l.spec.ca),
                    subject: l.cert.as_ref().map(|c| c.subject.clone()),
                    key_algorithm: l.cert.as_ref().map(|c| c.key_algorithm.clone()),
                    not_after: l
                        .cert
                        .as_ref()
                        .map(|c| contract::Timestamp(clock::rfc3339(c.not_after))),
                    days_left: l.cert.as_ref().map(|c| clock::days_until(now, c.not_after)),
                    within_threshold: l
                        .cert
                        .as_ref()
                        .map(|c| within_threshold(now, c.not_after, threshold)),
                    severity: l
                        .cert
                        .as_ref()
                        .map(|c| crate::rules::expiry::judge(now, c.not_after, threshold)),
                    chains_to_ca: l.chains_to_ca,
                    error: l.error.clone(),
                })
            })
            .collect()
    }

    /// The CAs as the read-only modes print them.
    pub fn authorities(&self, now: OffsetDateTime, threshold: u32) -> Vec<contract::CaView> {
        self.cas
            .iter()
            .map(|c| contract::CaView {
                name: ca_name(c.id),
                path: crate::node::paths::node(&c.id.cert_path()),
                sha256: c.sha256.clone().map(contract::Sha256Hex),
                not_after: c
                    .cert
                    .as_ref()
                    .map(|x| contract::Timestamp(clock::rfc3339(x.not_after))),
                days_left: c.cert.as_ref().map(|x| clock::days_until(now, x.not_after)),
                within_threshold: c
                    .cert
                    .as_ref()
                    .map(|x| within_threshold(now, x.not_after, threshold)),
                error: c.error.clone(),
            })
            .collect()
    }

    /// The `caSHA256` object (only the CAs that could be read).
    pub fn ca_sha256_view(&self) -> contract::CaSha256 {
        contract::CaSha256::from(&self.ca_sha256())
    }

    pub fn ca_sha256(&self) -> BTreeMap<String, String> {
        ca_fingerprints(&self.cas)
    }

    /// Problems that make a check fail: unreadable CAs, missing or
    /// unparsable leaves.
    pub fn errors(&self) -> Vec<String> {
        let mut v: Vec<String> = self.cas.iter().filter_map(|c| c.error.clone()).collect();
        v.extend(self.leaves.iter().filter_map(|l| l.error.clone()));
        v
    }

    /// SPEC 4 step 8 (v1.3): each CA that ends within the threshold with
    /// a leaf to renew under it (a due leaf; every leaf when `forced`), in
    /// words (`rules::expiry::ca_walls`); empty when none.
    pub fn ca_walls(&self, now: OffsetDateTime, threshold: u32, forced: bool) -> Vec<String> {
        let cas: Vec<(&str, OffsetDateTime)> = self
            .cas
            .iter()
            .filter_map(|c| c.cert.as_ref().map(|cert| (c.id.name(), cert.not_after)))
            .collect();
        let leaves = self.leaves.iter().filter_map(|l| {
            let cert = l.cert.as_ref()?;
            (forced || within_threshold(now, cert.not_after, threshold))
                .then_some((l.spec.name, l.spec.ca.name()))
        });
        crate::rules::expiry::ca_walls(leaves, &cas, now, threshold)
    }

    /// Leaves within the threshold, as (name, days left).
    pub fn leaves_due(&self, now: OffsetDateTime, threshold: u32) -> Vec<(String, i64)> {
        self.leaves
            .iter()
            .filter_map(|l| l.cert.as_ref().map(|c| (l.spec.name, c.not_after)))
            .filter(|(_, na)| within_threshold(now, *na, threshold))
            .map(|(n, na)| (n.to_string(), clock::days_until(now, na)))
            .collect()
    }

    /// Every leaf that could be read: its kubeadm name and notAfter.
    pub fn leaf_times(&self) -> Vec<(&'static str, OffsetDateTime)> {
        self.leaves
            .iter()
            .filter_map(|l| l.cert.as_ref().map(|c| (l.spec.name, c.not_after)))
            .collect()
    }

    /// Every leaf that could be read, with its node path and validity: what
    /// the renewal's refusal judges (SPEC 11).
    pub fn validity(&self) -> Vec<crate::rules::expiry::LeafValidity> {
        self.leaves
            .iter()
            .filter_map(|l| {
                l.cert.as_ref().map(|c| crate::rules::expiry::LeafValidity {
                    name: l.spec.name.to_string(),
                    path: crate::node::paths::node(l.spec.path),
                    not_before: c.not_before,
                    not_after: c.not_after,
                })
            })
            .collect()
    }

    /// The expired leaves, in leaf order: the name and the reason's words
    /// (`leaf apiserver expired 2026-11-30 (2 days ago)`; v1.2).
    pub fn expired(&self, now: OffsetDateTime) -> Vec<(&'static str, OffsetDateTime, String)> {
        self.leaf_times()
            .into_iter()
            .filter(|(_, t)| crate::rules::expiry::is_expired(now, *t))
            .map(|(n, t)| (n, t, crate::rules::expiry::expired_reason(n, t, now)))
            .collect()
    }

    /// The expired leaves as one problem (SPEC 6, v1.3), longest expired
    /// first; none when none has.
    pub fn expired_reasons(&self, now: OffsetDateTime) -> Vec<String> {
        let mut v = self.expired(now);
        v.sort_by_key(|(n, t, _)| (*t, *n));
        let leaves: Vec<(&str, OffsetDateTime)> = v.iter().map(|(n, t, _)| (*n, *t)).collect();
        crate::rules::expiry::expired_folded(&leaves, now)
            .into_iter()
            .collect()
    }

    /// The soonest-expiring leaf (name, days left).
    pub fn soonest_leaf(&self, now: OffsetDateTime) -> Option<(String, i64)> {
        self.leaves
            .iter()
            .filter_map(|l| l.cert.as_ref().map(|c| (l.spec.name, c.not_after)))
            .min_by_key(|(_, na)| *na)
            .map(|(n, na)| (n.to_string(), clock::days_until(now, na)))
    }

    /// Warnings that do not fail a check: CAs within the threshold, leaves
    /// that do not chain to their CA, leaves not valid yet. (A missing
    /// optional leaf is reported as `skipped`, not warned about: it is the
    /// normal state of every joined node.)
    pub fn warnings(&self, now: OffsetDateTime, threshold: u32) -> Vec<String> {
        let mut w = Vec::new();
        for c in &self.cas {
            if let Some(cert) = &c.cert {
                if crate::rules::expiry::is_expired(now, cert.not_after) {
                    w.push(format!(
                        "CA {} expired {} ({}); CAs are never renewed by this runbook",
                        c.id.name(),
                        crate::rules::expiry::date(cert.not_after),
                        crate::rules::expiry::ago(now, cert.not_after)
                    ));
                } else if within_threshold(now, cert.not_after, threshold) {
                    w.push(format!(
                        "CA {} expires {} ({} days left, within {threshold}); CAs are never renewed by this runbook",
                        c.id.name(),
                        clock::rfc3339(cert.not_after),
                        clock::days_until(now, cert.not_after)
                    ));
                }
            }
        }
        for l in &self.leaves {
            if let Some(cert) = &l.cert {
                if cert.not_before > now {
                    w.push(format!(
                        "leaf {} ({}) is not valid until {}: check the node's clock",
                        l.spec.name,
                        crate::node::paths::node(l.spec.path),
                        clock::rfc3339(cert.not_before)
                    ));
                }
            }
            if l.chains_to_ca == Some(false) {
                w.push(format!(
                    "leaf {} ({}) is not signed by its CA {}",
                    l.spec.name,
                    crate::node::paths::node(l.spec.path),
                    l.spec.ca.name()
                ));
            }
        }
        w
    }
}

/// A CA file someone other than root could replace.
#[derive(Debug, thiserror::Error)]
#[error("CA {key}: {e}; refusing to renew leaves under it")]
pub struct CaFileError {
    key: &'static str,
    e: crate::node::fsx::FsError,
}

/// The CAs are what every renewed leaf is signed with: a CA certificate or
/// key that someone other than root can replace is refused before kubeadm
/// signs anything with it (root-owned, not group/world writable; a missing
/// key, as with an external CA, is kubeadm's to report). --check and
/// --status-only read them as before.
pub fn cas_root_owned(root: &Root, cas: &[CaView]) -> Result<(), CaFileError> {
    for ca in cas {
        let cert = ca.id.cert_path();
        let key = cert.replace(".crt", ".key");
        for rel in [cert, key] {
            if let Err(e) = root.read_file(&rel, NODE_FILE_MAX, Trust::Strict) {
                return Err(CaFileError {
                    key: ca.id.key(),
                    e,
                });
            }
        }
    }
    Ok(())
}

/// Why the leaves kubeadm just renewed are not what a renewal needs
/// (SPEC 4 step 8).
#[derive(Debug, thiserror::Error)]
pub enum RenewedError {
    /// Leaves or CAs that could not be read or parsed.
    #[error("{}", .0.join("; "))]
    Unreadable(Vec<String>),
    #[error("{leaf} is not valid until {} after kubeadm (the node's clock or kubeadm is wrong)", clock::rfc3339(*.not_before))]
    NotValidYet {
        leaf: &'static str,
        not_before: OffsetDateTime,
    },
    #[error("{leaf} still expires {} (within {threshold_days} days) after kubeadm{}", clock::rfc3339(*.not_after), .capped.map(|ca| format!(": it ends when its CA {ca} ends; the CA must be rotated (never done here)")).unwrap_or_default())]
    StillDue {
        leaf: &'static str,
        not_after: OffsetDateTime,
        threshold_days: u32,
        /// The CA whose end it was capped at, when it ends with its CA.
        capped: Option<&'static str>,
    },
    /// Leaves kubeadm did not renew as they were (v1.3): each difference.
    #[error("{}", .0.join("; "))]
    NotRenewed(Vec<String>),
    #[error("{leaf} is not signed by its CA {ca}")]
    NotSigned {
        leaf: &'static str,
        ca: &'static str,
    },
    /// A key file could not be read.
    #[error("{0}")]
    Read(crate::node::fsx::FsError),
    /// A key file is missing (its node path).
    #[error("{0} does not exist")]
    Missing(String),
    #[error("{leaf}: {why}")]
    Kubeconfig { leaf: &'static str, why: String },
    #[error("{0} has no embedded client key")]
    NoEmbeddedKey(&'static str),
    #[error("the private key of {0} does not match its certificate")]
    KeyMismatch(&'static str),
    #[error("the private key of {leaf}: {why}")]
    Key { leaf: &'static str, why: String },
    #[error("a CA changed while renewing: CAs are never rotated here")]
    CaChanged,
}

/// Every leaf as the operation's backup holds it (before kubeadm; SPEC 4
/// step 8, "Leaf by leaf", v1.3), in SPEC order: None where the backup has
/// no copy (super-admin.conf on an older node). A copy that cannot be read
/// or parsed is an error naming it: nothing is proven against a guess.
pub fn backed_up_leaves(backup: &backup::Opened) -> Result<Vec<Option<LeafFacts>>, String> {
    pki::LEAVES
        .iter()
        .map(|spec| {
            let bytes = backup
                .read(spec.path)
                .map_err(|e| format!("the backup of {}: {e}", spec.name))?;
            leaf_cert_of(spec, bytes)
                .map(|c| c.as_ref().map(LeafFacts::from))
                .map_err(|e| format!("the backup of {}: {e}", spec.name))
        })
        .collect()
}

/// What a proven renewal found: each leaf's record, and what is worth
/// saying that did not fail it (a SAN added, a leaf that appeared).
#[derive(Debug, Clone, Default)]
pub struct Renewal {
    pub leaves: Vec<LeafRenewal>,
    pub notes: Vec<String>,
}

/// SPEC 4 step 8, "Leaf by leaf" (v1.3): each leaf now against `before`
/// (the backup's, [`backed_up_leaves`]): a new serial, the same subject,
/// SANs, usages and issuer. Every difference of every leaf, in words.
pub fn prove_leaves(pki: &PkiReport, before: &[Option<LeafFacts>]) -> Result<Renewal, Vec<String>> {
    let mut out = Renewal::default();
    let mut differs = Vec::new();
    for ((l, b), name) in pki
        .leaves
        .iter()
        .zip(before)
        .zip(contract::LeafName::SPEC_ORDER)
    {
        let after = l.cert.as_ref().map(LeafFacts::from);
        match leaf_proof::prove(l.spec.name, name, b.as_ref(), after.as_ref()) {
            Ok(Some(p)) => {
                out.leaves.push(p.record);
                out.notes.extend(p.notes);
            }
            Ok(None) => {}
            Err(d) => differs.extend(d),
        }
    }
    if differs.is_empty() {
        Ok(out)
    } else {
        Err(differs)
    }
}

/// SPEC 4 step 8's checks after kubeadm ran: every leaf readable, proven
/// renewed against `before` (the backup's leaves, "Leaf by leaf", v1.3),
/// valid now, out of the renewal window (`threshold_days`: a leaf capped
/// at its CA's end says so), signed by its CA, its key matching it; the
/// CAs still those the run holds the node to (`ca`).
pub fn verify_renewed(
    root: &Root,
    now: OffsetDateTime,
    threshold_days: u32,
    ca: &BTreeMap<String, String>,
    before: &[Option<LeafFacts>],
) -> Result<Renewal, RenewedError> {
    let pki = read(root);
    let errors = pki.errors();
    if !errors.is_empty() {
        return Err(RenewedError::Unreadable(errors));
    }
    let renewal = prove_leaves(&pki, before).map_err(RenewedError::NotRenewed)?;
    for l in &pki.leaves {
        let Some(cert) = &l.cert else { continue };
        let leaf = l.spec.name;
        // A leaf not valid yet would pass every other check and then
        // break the component it is restarted with.
        if cert.not_before > now {
            let not_before = cert.not_before;
            return Err(RenewedError::NotValidYet { leaf, not_before });
        }
        if within_threshold(now, cert.not_after, threshold_days) {
            let not_after = cert.not_after;
            // kubeadm ends a leaf no later than its CA: say which wall it hit.
            let capped = pki
                .cas
                .iter()
                .find(|c| c.id == l.spec.ca)
                .and_then(|c| c.cert.as_ref())
                .filter(|c| c.not_after <= not_after)
                .map(|_| l.spec.ca.name());
            return Err(RenewedError::StillDue {
                leaf,
                not_after,
                threshold_days,
                capped,
            });
        }
        if l.chains_to_ca != Some(true) {
            let ca = l.spec.ca.name();
            return Err(RenewedError::NotSigned { leaf, ca });
        }
        let read = |rel: &str| root.read_file(rel, NODE_FILE_MAX, Trust::TypeOnly);
        let key = match l.spec.kind {
            LeafKind::Pem => read(l.spec.key_path)
                .map_err(RenewedError::Read)?
                .ok_or_else(|| RenewedError::Missing(crate::node::paths::node(l.spec.key_path)))?,
            LeafKind::Kubeconfig => {
                let conf = read(l.spec.path)
                    .map_err(RenewedError::Read)?
                    .unwrap_or_default();
                pki::kubeconfig_client_key(&conf)
                    .map_err(|e| RenewedError::Kubeconfig {
                        leaf,
                        why: e.to_string(),
                    })?
                    .ok_or(RenewedError::NoEmbeddedKey(leaf))?
            }
        };
        match pki::key_matches_cert(cert, &key) {
            Ok(true) => {}
            Ok(false) => return Err(RenewedError::KeyMismatch(leaf)),
            Err(e) => {
                let why = e.to_string();
                return Err(RenewedError::Key { leaf, why });
            }
        }
    }
    if pki.ca_sha256() != *ca {
        return Err(RenewedError::CaChanged);
    }
    Ok(renewal)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read and plant files in their temp node
mod tests {
    //! SPEC 2 (which leaves, super-admin.conf optional), 5 (expiry against
    //! the clock and threshold, CAs warned about, never renewed) and 7
    //! (certificates in the output) on the fixture nodes (fixed dates:
    //! leaves 2026-06-01 to 2027-06-01, etcd/peer.crt to 2027-03-01, CAs to
    //! 2035-01-01).
    use super::*;
    use crate::tools::runtime::double::node_tree;
    use std::path::Path;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-30 00:00:00 UTC);
    const PKI: &str = "etc/kubernetes/pki";

    fn read_node(t: &Path) -> PkiReport {
        read(&Root::open(t).unwrap())
    }

    fn extra(name: &str) -> Vec<u8> {
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/pki-extra")
                .join(name),
        )
        .unwrap()
    }

    fn leaf<'a>(r: &'a PkiReport, name: &str) -> &'a LeafView {
        r.leaves.iter().find(|l| l.spec.name == name).unwrap()
    }

    /// Every leaf of SPEC 2 is printed: its name is one of the contract's.
    #[test]
    fn every_leaf_name_is_one_of_the_contracts() {
        for spec in pki::LEAVES.iter() {
            assert!(leaf_name(spec).is_some(), "{}", spec.name);
        }
    }

    #[test]
    fn a_whole_node_reads_clean_with_the_fingerprints_of_its_ca_files() {
        for node in ["rsa", "ecdsa"] {
            let t = node_tree(node);
            let r = read_node(t.path());
            assert_eq!(r.errors(), Vec::<String>::new(), "{node}");
            assert_eq!(r.warnings(NOW, 30), Vec::<String>::new(), "{node}");
            assert_eq!(r.leaves.len(), 11);
            for l in &r.leaves {
                assert_eq!(l.status, LeafStatus::Ok, "{node} {}", l.spec.name);
                assert_eq!(l.chains_to_ca, Some(true), "{node} {}", l.spec.name);
            }
            let fingerprints = r.ca_sha256();
            let keys: Vec<&str> = fingerprints.keys().map(String::as_str).collect();
            assert_eq!(keys, ["ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"]);
            for (key, sha) in &fingerprints {
                let bytes = std::fs::read(t.path().join(PKI).join(key)).unwrap();
                assert_eq!(sha, &pki::sha256_hex(&bytes), "{node} {key}");
            }
        }
    }

    /// SPEC 2: super-admin.conf may be missing: skipped and reported, not
    /// an error, not a warning.
    #[test]
    fn a_missing_super_admin_conf_is_skipped() {
        let t = node_tree("rsa");
        std::fs::remove_file(t.path().join("etc/kubernetes/super-admin.conf")).unwrap();
        let r = read_node(t.path());
        assert_eq!(leaf(&r, "super-admin.conf").status, LeafStatus::Skipped);
        assert_eq!(r.errors(), Vec::<String>::new());
        assert_eq!(r.warnings(NOW, 30), Vec::<String>::new());
        let json = serde_json::to_value(r.certificates(NOW, 30)).unwrap();
        let sa = json
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "super-admin.conf")
            .unwrap();
        assert_eq!(sa["status"], "skipped");
    }

    /// SPEC 2: every other leaf must exist; a missing one is an error
    /// naming it.
    #[test]
    fn any_other_missing_leaf_is_an_error_naming_it() {
        let t = node_tree("rsa");
        std::fs::remove_file(t.path().join("etc/kubernetes/scheduler.conf")).unwrap();
        std::fs::remove_file(t.path().join(PKI).join("etcd/peer.crt")).unwrap();
        let r = read_node(t.path());
        assert_eq!(leaf(&r, "scheduler.conf").status, LeafStatus::Error);
        assert_eq!(
            r.errors(),
            [
                "/etc/kubernetes/pki/etcd/peer.crt does not exist",
                "/etc/kubernetes/scheduler.conf does not exist"
            ]
        );
    }

    /// SPEC 2: a leaf that exists and cannot be parsed is an error naming
    /// it; so is a kubeconfig that names a certificate file instead of
    /// embedding it (kubeadm embeds it).
    #[test]
    fn an_unparsable_leaf_is_an_error_naming_it() {
        let t = node_tree("rsa");
        std::fs::write(t.path().join(PKI).join("apiserver.crt"), b"half-written").unwrap();
        let admin = t.path().join("etc/kubernetes/admin.conf");
        let yaml = std::fs::read_to_string(&admin).unwrap();
        let data = yaml
            .lines()
            .find(|l| l.contains("client-certificate-data:"))
            .unwrap();
        std::fs::write(
            &admin,
            yaml.replace(
                data,
                "    client-certificate: /etc/kubernetes/pki/admin.crt",
            ),
        )
        .unwrap();
        let r = read_node(t.path());
        let errors = r.errors();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("/etc/kubernetes/pki/apiserver.crt: "),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("/etc/kubernetes/admin.conf names a client certificate file"),
            "{errors:?}"
        );
    }

    /// SPEC 5: a leaf that does not chain to its CA is a warning (the
    /// renewal's own check after kubeadm is what fails a run).
    #[test]
    fn a_leaf_not_signed_by_its_ca_is_a_warning() {
        let t = node_tree("rsa");
        std::fs::write(
            t.path().join(PKI).join("apiserver.crt"),
            extra("apiserver-foreign.crt"),
        )
        .unwrap();
        let r = read_node(t.path());
        assert_eq!(leaf(&r, "apiserver").chains_to_ca, Some(false));
        assert_eq!(r.errors(), Vec::<String>::new());
        assert_eq!(
            r.warnings(NOW, 30),
            ["leaf apiserver (/etc/kubernetes/pki/apiserver.crt) is not signed by its CA ca"]
        );
    }

    /// A leaf not valid yet says to check the node's clock.
    #[test]
    fn a_leaf_not_valid_yet_is_a_warning() {
        let t = node_tree("rsa");
        std::fs::write(
            t.path().join(PKI).join("apiserver.crt"),
            extra("apiserver-not-yet-valid.crt"),
        )
        .unwrap();
        let r = read_node(t.path());
        assert_eq!(leaf(&r, "apiserver").chains_to_ca, Some(true));
        assert_eq!(
            r.warnings(NOW, 30),
            ["leaf apiserver (/etc/kubernetes/pki/apiserver.crt) is not valid until 2030-01-01T00:00:00Z: check the node's clock"]
        );
    }

    /// A CA that cannot be read is an error; it has no fingerprint (the
    /// map holds only what was read), and its leaves are not judged
    /// against it.
    #[test]
    fn an_unreadable_ca_is_an_error_and_its_leaves_are_not_judged() {
        let t = node_tree("rsa");
        std::fs::remove_file(t.path().join(PKI).join("etcd/ca.crt")).unwrap();
        let r = read_node(t.path());
        assert_eq!(
            r.errors(),
            ["/etc/kubernetes/pki/etcd/ca.crt does not exist"]
        );
        let keys: Vec<String> = r.ca_sha256().into_keys().collect();
        assert_eq!(keys, ["ca.crt", "front-proxy-ca.crt"]);
        for l in &r.leaves {
            let expected = (l.spec.ca != CaId::Etcd).then_some(true);
            assert_eq!(l.chains_to_ca, expected, "{}", l.spec.name);
        }
    }

    /// SPEC 1 and 4 step 6: "expires within N days" includes the day N
    /// itself, and holds near the end of time (`--now 9999-12-31`) without
    /// overflowing.
    #[test]
    fn within_the_threshold_includes_its_last_moment_and_the_end_of_time() {
        let na = datetime!(2027-03-01 00:00:00 UTC);
        assert!(within_threshold(datetime!(2027-01-30 00:00:00 UTC), na, 30));
        assert!(!within_threshold(
            datetime!(2027-01-29 23:59:59 UTC),
            na,
            30
        ));
        assert!(within_threshold(datetime!(9999-12-31 00:00:00 UTC), na, 90));
    }

    /// Which leaves are due, the soonest, and how output shows them.
    #[test]
    fn the_leaves_due_are_judged_at_the_clock_and_threshold() {
        let t = node_tree("rsa");
        let r = read_node(t.path());
        let now = datetime!(2027-02-01 00:00:00 UTC);
        assert_eq!(r.leaves_due(now, 30), [("etcd-peer".to_string(), 28)]);
        assert_eq!(r.leaves_due(NOW, 90), Vec::<(String, i64)>::new());
        // Expired counts as due: 2027-03-05 is past etcd-peer's end and
        // within 90 days of everyone else's.
        let later = datetime!(2027-03-05 00:00:00 UTC);
        assert_eq!(r.leaves_due(later, 90).len(), 11);
        assert_eq!(r.soonest_leaf(later), Some(("etcd-peer".to_string(), -4)));
        assert_eq!(r.soonest_leaf(now), Some(("etcd-peer".to_string(), 28)));
        let json = serde_json::to_value(r.certificates(now, 30)).unwrap();
        let peer = json
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "etcd-peer")
            .unwrap()
            .clone();
        assert_eq!(peer["path"], "/etc/kubernetes/pki/etcd/peer.crt");
        assert_eq!(peer["ca"], "etcd-ca");
        assert_eq!(peer["notAfter"], "2027-03-01T00:00:00Z");
        assert_eq!(peer["daysLeft"], 28);
        assert_eq!(peer["withinThreshold"], true);
        assert_eq!(peer["chainsToCA"], true);
    }

    /// SPEC 5: a CA within the threshold is a warning, never renewed.
    #[test]
    fn a_ca_within_the_threshold_is_a_warning() {
        let t = node_tree("rsa");
        let r = read_node(t.path());
        let now = datetime!(2034-12-15 00:00:00 UTC);
        let w = r.warnings(now, 30);
        assert_eq!(w.len(), 3, "{w:?}");
        assert_eq!(
            w[0],
            "CA ca expires 2035-01-01T00:00:00Z (17 days left, within 30); CAs are never renewed by this runbook"
        );
        let cas = serde_json::to_value(r.authorities(now, 30)).unwrap();
        assert_eq!(cas[1]["name"], "etcd-ca");
        assert_eq!(cas[1]["withinThreshold"], true);
        assert_eq!(r.errors(), Vec::<String>::new());
    }
}
