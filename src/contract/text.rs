//! The text view, rendered from the documents' values (SPEC 7): escaped
//! cells, aligned tables, the certificate and kubelet tables. What a mode
//! prints for people is built from these; none of it reads the node.

use crate::contract::{self, LeafStatus};

/// A string for the terminal (SPEC 7, v1.1): every control character (C0,
/// DEL, C1: ESC, CR, LF, TAB, ...) and every bidirectional-override
/// character is shown escaped (`\x1b`, `\u{202e}`), so text from a file, the
/// node agent or a tool can never move the cursor, rewrite a line or forge
/// output. A backslash is doubled, so an escape can not be forged either.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        crate::rules::opid::push_escaped(&mut out, c);
    }
    out
}

/// The JSON string a closed vocabulary's value prints as (`renew`, `etcd`).
pub fn word<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub fn text_list(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("{title}:\n"));
    for i in items {
        out.push_str(&format!("  - {}\n", escape(i)));
    }
}

/// Render rows as aligned columns (two spaces between columns). Every cell
/// is escaped ([`escape`]): cells carry file contents and tool output.
pub fn table(out: &mut String, rows: &[Vec<String>]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape(c)).collect())
        .collect();
    let rows = &rows[..];
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(widths[i] - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn residual(days: i64) -> String {
    if days < 0 {
        "EXPIRED".to_string()
    } else {
        format!("{days}d")
    }
}

/// The kubelet's certificates in one row (v1.2): each with its expiry and
/// whether the kubelet rotates it; why none are listed otherwise.
pub fn text_kubelet(
    out: &mut String,
    certs: &[contract::KubeletCertificateView],
    note: Option<&str>,
) {
    let line = if certs.is_empty() {
        note.unwrap_or("none found").to_string()
    } else {
        certs
            .iter()
            .map(|c| {
                let role = match c.role {
                    contract::KubeletRole::Client => "client",
                    contract::KubeletRole::Serving => "serving",
                };
                let rot = match c.rotates {
                    Some(true) => "rotated by the kubelet",
                    Some(false) => "not rotated",
                    None => "rotation unknown",
                };
                match (&c.not_after, c.days_left, &c.error) {
                    (_, _, Some(e)) => format!("{role} ERROR: {e}"),
                    (Some(t), Some(d), None) => format!(
                        "{role} {} ({}, {rot})",
                        t.0.chars().take(10).collect::<String>(),
                        residual(d)
                    ),
                    _ => format!("{role} -"),
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    out.push('\n');
    table(out, &[vec!["KUBELET".to_string(), line]]);
}

/// The certificates and CAs the document prints, like `kubeadm certs
/// check-expiration`. Narrow (the default): the healthy ones folded into
/// one line each (how many, the earliest expiry), the others listed with
/// what is wrong; `wide`: both tables in full, CA digests included.
pub fn text_cert_tables(
    out: &mut String,
    leaves: &[contract::CertificateView],
    cas: &[contract::CaView],
    threshold: u32,
    wide: bool,
) {
    let t = CertTables { threshold, wide };
    if wide {
        t.every_one(out, leaves, cas);
    } else {
        t.summary(out, leaves, cas);
    }
}

/// How the certificate tables are laid out: the threshold the notes name,
/// and `--wide` (every row, instants, digests) or not (counts, then only
/// what needs attention, days).
struct CertTables {
    threshold: u32,
    wide: bool,
}

impl CertTables {
    fn leaf_note(&self, l: &contract::CertificateView) -> String {
        let mut note = match (&l.not_after, l.days_left, l.status) {
            (Some(_), Some(d), _) if d < 0 => "expired".to_string(),
            (Some(_), Some(_), _) if l.within_threshold == Some(true) => {
                format!("within {}d", self.threshold)
            }
            (Some(_), Some(_), _) => String::new(),
            (_, _, LeafStatus::Skipped) => "skipped (optional, absent)".into(),
            _ => format!("ERROR: {}", l.error.clone().unwrap_or_default()),
        };
        if l.chains_to_ca == Some(false) {
            note = format!("{note} NOT SIGNED BY CA").trim().to_string();
        }
        note
    }

    fn healthy(&self, l: &contract::CertificateView) -> bool {
        self.leaf_note(l).is_empty() || l.status == LeafStatus::Skipped
    }

    /// Narrow tables show the day; --wide the instant.
    fn when(&self, t: &contract::Timestamp) -> String {
        if self.wide {
            t.0.clone()
        } else {
            t.0.chars().take(10).collect()
        }
    }

    fn expires(&self, t: Option<&contract::Timestamp>, days: Option<i64>) -> (String, String) {
        match (t, days) {
            (Some(t), Some(d)) => (self.when(t), residual(d)),
            _ => ("-".into(), "-".into()),
        }
    }

    fn leaf_row(&self, l: &contract::CertificateView) -> Vec<String> {
        let (exp, res) = self.expires(l.not_after.as_ref(), l.days_left);
        vec![word(&l.name), exp, res, word(&l.ca), self.leaf_note(l)]
    }

    fn leaf_header() -> Vec<String> {
        ["CERTIFICATE", "EXPIRES", "RESIDUAL", "CA", "NOTE"]
            .map(String::from)
            .to_vec()
    }

    fn ca_healthy(c: &contract::CaView) -> bool {
        c.error.is_none() && c.within_threshold != Some(true)
    }

    fn ca_row(&self, c: &contract::CaView) -> Vec<String> {
        let (exp, res) = self.expires(c.not_after.as_ref(), c.days_left);
        let note = match (&c.error, c.within_threshold) {
            (Some(e), _) => format!("ERROR: {e}"),
            (None, _) if c.days_left.is_some_and(|d| d < 0) => {
                "EXPIRED: never renewed by this runbook".to_string()
            }
            (None, Some(true)) => {
                format!("within {}d: never renewed by this runbook", self.threshold)
            }
            _ => String::new(),
        };
        vec![word(&c.name), exp, res, note]
    }

    /// `, earliest NAME DAY (RESIDUAL)` of the soonest of `items`.
    fn earliest(&self, items: Vec<(String, &contract::Timestamp, i64)>) -> String {
        items
            .into_iter()
            .min_by(|a, b| a.1 .0.cmp(&b.1 .0))
            .map(|(n, t, d)| format!(", earliest {n} {} ({})", self.when(t), residual(d)))
            .unwrap_or_default()
    }

    /// `--wide`: every leaf, then every CA with its digest.
    fn every_one(
        &self,
        out: &mut String,
        leaves: &[contract::CertificateView],
        cas: &[contract::CaView],
    ) {
        let mut rows = vec![Self::leaf_header()];
        rows.extend(leaves.iter().map(|l| self.leaf_row(l)));
        table(out, &rows);
        out.push('\n');
        let mut rows = vec![["CERTIFICATE AUTHORITY", "EXPIRES", "RESIDUAL", "NOTE"]
            .map(String::from)
            .to_vec()];
        rows.extend(cas.iter().map(|c| self.ca_row(c)));
        table(out, &rows);
        // Each digest on a line of its own: 64 characters stay whole on an
        // 80-column terminal (a table column would be soft-wrapped).
        out.push_str("\nCA SHA256\n");
        for c in cas {
            out.push_str(&format!(
                "  {}\n    {}\n",
                word(&c.name),
                c.sha256.as_ref().map(|h| h.0.as_str()).unwrap_or("-")
            ));
        }
    }

    /// The counts with the earliest of each, then only the leaves and CAs
    /// that need attention.
    fn summary(
        &self,
        out: &mut String,
        leaves: &[contract::CertificateView],
        cas: &[contract::CaView],
    ) {
        let ok = leaves.iter().filter(|l| self.healthy(l)).count();
        let ok_cas: Vec<&contract::CaView> = cas.iter().filter(|c| Self::ca_healthy(c)).collect();
        let soonest = |items: Vec<(String, Option<&contract::Timestamp>, Option<i64>)>| {
            self.earliest(
                items
                    .into_iter()
                    .filter_map(|(n, t, d)| Some((n, t?, d?)))
                    .collect(),
            )
        };
        let rows = vec![
            vec![
                "CERTIFICATES".to_string(),
                format!(
                    "{ok} of {} ok{}",
                    leaves.len(),
                    // The soonest leaf of all, an expired one first (v1.2).
                    soonest(
                        leaves
                            .iter()
                            .map(|l| (word(&l.name), l.not_after.as_ref(), l.days_left))
                            .collect()
                    )
                ),
            ],
            vec![
                "CAS".to_string(),
                format!(
                    "{} of {} ok{}",
                    ok_cas.len(),
                    cas.len(),
                    soonest(
                        ok_cas
                            .iter()
                            .map(|c| (word(&c.name), c.not_after.as_ref(), c.days_left))
                            .collect()
                    )
                ),
            ],
            vec![
                String::new(),
                "(every one, and the CA digests: --wide)".into(),
            ],
        ];
        table(out, &rows);
        let bad: Vec<Vec<String>> = leaves
            .iter()
            .filter(|l| !self.healthy(l))
            .map(|l| self.leaf_row(l))
            .collect();
        if !bad.is_empty() {
            out.push('\n');
            let mut rows = vec![Self::leaf_header()];
            rows.extend(bad);
            table(out, &rows);
        }
        let bad: Vec<Vec<String>> = cas
            .iter()
            .filter(|c| !Self::ca_healthy(c))
            .map(|c| self.ca_row(c))
            .collect();
        if !bad.is_empty() {
            out.push('\n');
            let mut rows = vec![["CA", "EXPIRES", "RESIDUAL", "NOTE"]
                .map(String::from)
                .to_vec()];
            rows.extend(bad);
            table(out, &rows);
        }
    }
}
