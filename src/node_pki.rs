//! Reading the node's PKI: the three CAs (fingerprinted) and every leaf of
//! SPEC section 2, with expiry relative to a clock and a threshold.

use crate::clock;
use crate::fsx::{Root, Trust, NODE_FILE_MAX};
use crate::pki::{self, CaId, KubeconfigCert, LeafKind, LeafSpec, ParsedCert};
use serde::Serialize;
use std::collections::BTreeMap;
use time::{Duration, OffsetDateTime};

#[derive(Debug, Clone)]
pub struct CaView {
    pub id: CaId,
    pub sha256: Option<String>,
    pub cert: Option<ParsedCert>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeafStatus {
    Ok,
    /// Optional and missing (super-admin.conf before Kubernetes 1.29).
    Skipped,
    Error,
}

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
                            error: Some(format!("{}: {e}", crate::paths::node(&path))),
                        },
                    }
                }
                Ok(None) => CaView {
                    id,
                    sha256: None,
                    cert: None,
                    error: Some(format!("{} does not exist", crate::paths::node(&path))),
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

fn read_leaf_cert(root: &Root, spec: &LeafSpec) -> Result<Option<ParsedCert>, String> {
    let node = crate::paths::node(spec.path);
    let bytes = match root.read_file(spec.path, NODE_FILE_MAX, Trust::TypeOnly) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let pem = match spec.kind {
        LeafKind::Pem => bytes,
        LeafKind::Kubeconfig => match pki::kubeconfig_client_cert(&bytes) {
            Ok(KubeconfigCert::Embedded(pem)) => pem,
            Ok(KubeconfigCert::File(p)) => {
                return Err(format!(
                    "{node} names a client certificate file ({p}) instead of embedding it; kubeadm embeds it"
                ))
            }
            Err(e) => return Err(format!("{node}: {e}")),
        },
    };
    pki::parse_pem_certificate(&pem)
        .map(Some)
        .map_err(|e| format!("{node}: {e}"))
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
                error: Some(format!("{} does not exist", crate::paths::node(spec.path))),
            },
            Err(e) => LeafView {
                spec: *spec,
                status: LeafStatus::Error,
                cert: None,
                chains_to_ca: None,
                error: Some(e),
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

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CertJson {
    pub name: String,
    pub path: String,
    pub status: LeafStatus,
    pub ca: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_algorithm: Option<String>,
    pub not_after: Option<String>,
    pub days_left: Option<i64>,
    pub within_threshold: Option<bool>,
    #[serde(rename = "chainsToCA")]
    pub chains_to_ca: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaJson {
    pub name: String,
    pub path: String,
    pub sha256: Option<String>,
    pub not_after: Option<String>,
    pub days_left: Option<i64>,
    pub within_threshold: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PkiReport {
    pub fn leaves_json(&self, now: OffsetDateTime, threshold: u32) -> Vec<CertJson> {
        self.leaves
            .iter()
            .map(|l| CertJson {
                name: l.spec.name.to_string(),
                path: crate::paths::node(l.spec.path),
                status: l.status,
                ca: l.spec.ca.name().to_string(),
                subject: l.cert.as_ref().map(|c| c.subject.clone()),
                key_algorithm: l.cert.as_ref().map(|c| c.key_algorithm.clone()),
                not_after: l.cert.as_ref().map(|c| clock::rfc3339(c.not_after)),
                days_left: l.cert.as_ref().map(|c| clock::days_until(now, c.not_after)),
                within_threshold: l
                    .cert
                    .as_ref()
                    .map(|c| within_threshold(now, c.not_after, threshold)),
                chains_to_ca: l.chains_to_ca,
                error: l.error.clone(),
            })
            .collect()
    }

    pub fn cas_json(&self, now: OffsetDateTime, threshold: u32) -> Vec<CaJson> {
        self.cas
            .iter()
            .map(|c| CaJson {
                name: c.id.name().to_string(),
                path: crate::paths::node(&c.id.cert_path()),
                sha256: c.sha256.clone(),
                not_after: c.cert.as_ref().map(|x| clock::rfc3339(x.not_after)),
                days_left: c.cert.as_ref().map(|x| clock::days_until(now, x.not_after)),
                within_threshold: c
                    .cert
                    .as_ref()
                    .map(|x| within_threshold(now, x.not_after, threshold)),
                error: c.error.clone(),
            })
            .collect()
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

    /// Leaves within the threshold, as (name, days left).
    pub fn leaves_due(&self, now: OffsetDateTime, threshold: u32) -> Vec<(String, i64)> {
        self.leaves
            .iter()
            .filter_map(|l| l.cert.as_ref().map(|c| (l.spec.name, c.not_after)))
            .filter(|(_, na)| within_threshold(now, *na, threshold))
            .map(|(n, na)| (n.to_string(), clock::days_until(now, na)))
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
                if within_threshold(now, cert.not_after, threshold) {
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
                        crate::paths::node(l.spec.path),
                        clock::rfc3339(cert.not_before)
                    ));
                }
            }
            if l.chains_to_ca == Some(false) {
                w.push(format!(
                    "leaf {} ({}) is not signed by its CA {}",
                    l.spec.name,
                    crate::paths::node(l.spec.path),
                    l.spec.ca.name()
                ));
            }
        }
        w
    }
}
