//! SPEC 4 step 8, "Leaf by leaf" (v1.3): a leaf kubeadm renewed keeps what
//! it was (subject, SANs, key usages, issuer) and changes what a renewal
//! changes (its serial). Pure: the facts of each leaf before kubeadm (from
//! the operation's backup) and after it in; the leaf's record, or what
//! differs in words, out. The threshold, the chain and the key match stay
//! `node::node_pki::verify_renewed`'s.

use crate::rules::clock;
use crate::rules::files::LeafRenewal;
use crate::rules::pki::ParsedCert;
use crate::rules::values::{LeafName, Timestamp};
use time::OffsetDateTime;

/// What a renewal must keep of a leaf, and what it must change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafFacts {
    /// Lowercase hex.
    pub serial: String,
    pub subject: String,
    pub issuer: String,
    /// `DNS:name` and `IP:address`, sorted.
    pub sans: Vec<String>,
    pub usages: Vec<String>,
    pub not_after: OffsetDateTime,
}

impl From<&ParsedCert> for LeafFacts {
    fn from(c: &ParsedCert) -> LeafFacts {
        let mut sans: Vec<String> = c
            .dns_names
            .iter()
            .map(|d| format!("DNS:{d}"))
            .chain(c.ip_addresses.iter().map(|i| format!("IP:{i}")))
            .collect();
        sans.sort();
        sans.dedup();
        LeafFacts {
            serial: c.serial.clone(),
            subject: c.subject.clone(),
            issuer: c.issuer.clone(),
            sans,
            usages: c.usages.clone(),
            not_after: c.not_after,
        }
    }
}

/// A leaf proven renewed: its record, and what is worth saying about it
/// that does not fail the renewal (a SAN added, a leaf that appeared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    pub record: LeafRenewal,
    pub notes: Vec<String>,
}

/// Prove one leaf (`leaf`: kubeadm's name) renewed: `before` is the leaf
/// as the backup holds it, `after` as kubeadm left it (None: absent).
/// `Ok(None)`: absent before and after (super-admin.conf on a node older
/// than Kubernetes 1.29; a required leaf that is absent after kubeadm is
/// the reader's error). `Err`: each thing that differs, in words, the
/// leaf named first.
pub fn prove(
    leaf: &str,
    name: LeafName,
    before: Option<&LeafFacts>,
    after: Option<&LeafFacts>,
) -> Result<Option<Proven>, Vec<String>> {
    let record = |b: Option<&LeafFacts>, a: &LeafFacts| LeafRenewal {
        name,
        serial_before: b.map(|b| b.serial.clone()),
        serial_after: a.serial.clone(),
        not_after_before: b.map(|b| Timestamp(clock::rfc3339(b.not_after))),
        not_after_after: Timestamp(clock::rfc3339(a.not_after)),
    };
    let (b, a) = match (before, after) {
        (None, None) => return Ok(None),
        (Some(_), None) => return Err(vec![format!("{leaf} is gone after kubeadm")]),
        (None, Some(a)) => {
            return Ok(Some(Proven {
                record: record(None, a),
                notes: vec![format!(
                    "{leaf} appeared while kubeadm ran (it was not there before): judged as renewed"
                )],
            }))
        }
        (Some(b), Some(a)) => (b, a),
    };
    if a.serial == b.serial {
        return Err(vec![format!(
            "{leaf} was not renewed: its serial {} is unchanged",
            short(&a.serial)
        )]);
    }
    let mut differs = Vec::new();
    let lost: Vec<&str> = b
        .sans
        .iter()
        .filter(|s| !a.sans.contains(s))
        .map(String::as_str)
        .collect();
    if !lost.is_empty() {
        differs.push(format!("{leaf} lost {}", lost.join(", ")));
    }
    if a.subject != b.subject {
        differs.push(format!(
            "{leaf} changed its subject from {} to {}",
            b.subject, a.subject
        ));
    }
    if a.usages != b.usages {
        differs.push(format!(
            "{leaf} changed its key usages from [{}] to [{}]",
            b.usages.join(", "),
            a.usages.join(", ")
        ));
    }
    if a.issuer != b.issuer {
        differs.push(format!(
            "{leaf} changed its issuer from {} to {}",
            b.issuer, a.issuer
        ));
    }
    if !differs.is_empty() {
        return Err(differs);
    }
    let added: Vec<&str> = a
        .sans
        .iter()
        .filter(|s| !b.sans.contains(s))
        .map(String::as_str)
        .collect();
    let notes = if added.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "{leaf} gained {} (allowed: no name it answered to was lost)",
            added.join(", ")
        )]
    };
    Ok(Some(Proven {
        record: record(Some(b), a),
        notes,
    }))
}

/// A serial as a message shows it: at most 16 hex digits, then `...`.
fn short(serial: &str) -> String {
    if serial.len() > 16 {
        format!("{}...", &serial[..16])
    } else {
        serial.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn facts(serial: &str) -> LeafFacts {
        LeafFacts {
            serial: serial.into(),
            subject: "CN=kube-apiserver".into(),
            issuer: "CN=kubernetes".into(),
            sans: vec![
                "DNS:kubernetes".into(),
                "DNS:kubernetes.default".into(),
                "IP:10.96.0.1".into(),
            ],
            usages: vec![
                "digitalSignature".into(),
                "keyEncipherment".into(),
                "serverAuth".into(),
            ],
            not_after: datetime!(2027-06-01 00:00:00 UTC),
        }
    }

    fn renewed() -> LeafFacts {
        LeafFacts {
            serial: "bb".into(),
            not_after: datetime!(2027-12-01 00:00:00 UTC),
            ..facts("")
        }
    }

    fn prove_ap(
        b: Option<&LeafFacts>,
        a: Option<&LeafFacts>,
    ) -> Result<Option<Proven>, Vec<String>> {
        prove("apiserver", LeafName::Apiserver, b, a)
    }

    #[test]
    fn a_renewed_leaf_is_recorded_with_both_serials_and_ends() {
        let p = prove_ap(Some(&facts("aa")), Some(&renewed()))
            .unwrap()
            .unwrap();
        assert_eq!(
            p.record,
            LeafRenewal {
                name: LeafName::Apiserver,
                serial_before: Some("aa".into()),
                serial_after: "bb".into(),
                not_after_before: Some(Timestamp("2027-06-01T00:00:00Z".into())),
                not_after_after: Timestamp("2027-12-01T00:00:00Z".into()),
            }
        );
        assert!(p.notes.is_empty());
    }

    #[test]
    fn the_same_serial_is_a_leaf_kubeadm_skipped() {
        let e = prove_ap(Some(&facts("aa")), Some(&facts("aa"))).unwrap_err();
        assert_eq!(e, ["apiserver was not renewed: its serial aa is unchanged"]);
        let long = "0123456789abcdef0123";
        let e = prove_ap(Some(&facts(long)), Some(&facts(long))).unwrap_err();
        assert_eq!(
            e,
            ["apiserver was not renewed: its serial 0123456789abcdef... is unchanged"]
        );
    }

    #[test]
    fn a_lost_san_a_changed_subject_usage_or_issuer_each_named() {
        let mut a = renewed();
        a.sans.retain(|s| s != "DNS:kubernetes.default");
        assert_eq!(
            prove_ap(Some(&facts("aa")), Some(&a)).unwrap_err(),
            ["apiserver lost DNS:kubernetes.default"]
        );
        let mut a = renewed();
        a.subject = "O=kubeadm:cluster-admins, CN=kubernetes-admin".into();
        a.usages.retain(|u| u != "keyEncipherment");
        a.issuer = "CN=other".into();
        a.sans.clear();
        assert_eq!(
            prove_ap(Some(&facts("aa")), Some(&a)).unwrap_err(),
            [
                "apiserver lost DNS:kubernetes, DNS:kubernetes.default, IP:10.96.0.1",
                "apiserver changed its subject from CN=kube-apiserver to O=kubeadm:cluster-admins, CN=kubernetes-admin",
                "apiserver changed its key usages from [digitalSignature, keyEncipherment, serverAuth] to [digitalSignature, serverAuth]",
                "apiserver changed its issuer from CN=kubernetes to CN=other",
            ]
        );
    }

    #[test]
    fn an_added_san_is_allowed_and_said() {
        let mut a = renewed();
        a.sans.push("DNS:extra.example.com".into());
        let p = prove_ap(Some(&facts("aa")), Some(&a)).unwrap().unwrap();
        assert_eq!(
            p.notes,
            ["apiserver gained DNS:extra.example.com (allowed: no name it answered to was lost)"]
        );
    }

    #[test]
    fn absent_leaves_skipped_gone_or_appeared() {
        assert_eq!(prove_ap(None, None), Ok(None));
        assert_eq!(
            prove_ap(Some(&facts("aa")), None).unwrap_err(),
            ["apiserver is gone after kubeadm"]
        );
        let p = prove(
            "super-admin.conf",
            LeafName::SuperAdminConf,
            None,
            Some(&renewed()),
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.record.serial_before, None);
        assert_eq!(p.record.not_after_before, None);
        assert_eq!(
            p.notes,
            ["super-admin.conf appeared while kubeadm ran (it was not there before): judged as renewed"]
        );
    }
}
