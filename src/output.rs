//! Writing results: one JSON object or a short text for people, written once
//! to a locked stdout. A closed stdout (EPIPE: the SSH session is gone) is
//! ignored, never a reason to stop or panic.

use crate::clock;
use crate::component::Component;
use crate::manifests::ManifestsReport;
use crate::node_pki::{LeafStatus, PkiReport};
use serde_json::Value;
use std::io::Write;
use time::OffsetDateTime;

/// What a mode produced: its exit code and both renderings.
#[derive(Debug, Clone)]
pub struct Report {
    pub code: u8,
    pub json: Value,
    pub text: String,
}

/// Write the JSON object (one line, newline-terminated) to stdout.
pub fn emit_json(v: &Value) {
    let mut line = serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&line);
    let _ = out.flush();
}

pub fn emit_text(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// Write to stderr, ignoring a closed stderr.
pub fn emit_stderr(s: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
}

pub fn text_list(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("{title}:\n"));
    for i in items {
        out.push_str(&format!("  - {i}\n"));
    }
}

/// Render rows as aligned columns (two spaces between columns).
pub fn table(out: &mut String, rows: &[Vec<String>]) {
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

fn manifest_cell(m: &ManifestsReport, c: Component) -> String {
    let Some(v) = m.manifests.get(&c) else {
        return "?".into();
    };
    if let Some(e) = &v.error {
        return format!("REFUSED ({e})");
    }
    let mut parts = Vec::new();
    if v.active {
        parts.push("active");
    }
    if v.runbook_staged {
        parts.push("staged (runbook)");
    }
    if v.agent_staged {
        parts.push("staged (agent)");
    }
    if parts.is_empty() {
        "MISSING".into()
    } else if parts.len() > 1 {
        format!("CONFLICT: {}", parts.join(" + "))
    } else if !v.active {
        parts[0].to_uppercase()
    } else {
        parts[0].to_string()
    }
}

/// Lock, phase, agent state and manifests at a glance.
pub fn text_node_summary(
    out: &mut String,
    lock: &str,
    phase: &str,
    agent: &str,
    m: &ManifestsReport,
) {
    let mut rows = vec![
        vec!["LOCK".to_string(), lock.to_string()],
        vec!["PHASE FILE".to_string(), phase.to_string()],
    ];
    if !agent.is_empty() {
        rows.push(vec!["AGENT STATE".to_string(), agent.to_string()]);
    }
    for c in Component::ALL {
        rows.push(vec![format!("MANIFEST {}", c.name()), manifest_cell(m, c)]);
    }
    for (v, who) in [
        (&m.runbook_staging, "STAGING (runbook)"),
        (&m.agent_staging, "STAGING (agent)"),
    ] {
        let cell = if let Some(e) = &v.error {
            format!("REFUSED ({e})")
        } else if !v.exists {
            format!("{} (absent)", v.path)
        } else if v.entries.is_empty() {
            format!("{} (empty)", v.path)
        } else {
            format!("{}: {}", v.path, v.entries.join(", "))
        };
        rows.push(vec![who.to_string(), cell]);
    }
    if let Some(e) = &m.manifests_dir_error {
        rows.push(vec!["MANIFESTS DIR".to_string(), format!("REFUSED ({e})")]);
    }
    for s in &m.strays {
        rows.push(vec![
            "STRAY".to_string(),
            format!("{} ({})", s.path, s.reason),
        ]);
    }
    table(out, &rows);
}

fn residual(days: i64) -> String {
    if days < 0 {
        "EXPIRED".to_string()
    } else {
        format!("{days}d")
    }
}

/// Two tables like `kubeadm certs check-expiration`.
pub fn text_cert_tables(out: &mut String, pki: &PkiReport, now: OffsetDateTime, threshold: u32) {
    let mut rows = vec![vec![
        "CERTIFICATE".to_string(),
        "EXPIRES".to_string(),
        "RESIDUAL".to_string(),
        "CA".to_string(),
        "NOTE".to_string(),
    ]];
    for l in &pki.leaves {
        let (exp, res, mut note) = match (&l.cert, l.status) {
            (Some(c), _) => {
                let days = clock::days_until(now, c.not_after);
                let note = if crate::node_pki::within_threshold(now, c.not_after, threshold) {
                    format!("within {threshold}d")
                } else {
                    String::new()
                };
                (clock::rfc3339(c.not_after), residual(days), note)
            }
            (None, LeafStatus::Skipped) => {
                ("-".into(), "-".into(), "skipped (optional, absent)".into())
            }
            (None, _) => (
                "-".into(),
                "-".into(),
                format!("ERROR: {}", l.error.clone().unwrap_or_default()),
            ),
        };
        if l.chains_to_ca == Some(false) {
            note = format!("{note} NOT SIGNED BY CA").trim().to_string();
        }
        rows.push(vec![
            l.spec.name.to_string(),
            exp,
            res,
            l.spec.ca.name().to_string(),
            note,
        ]);
    }
    table(out, &rows);
    out.push('\n');
    let mut rows = vec![vec![
        "CERTIFICATE AUTHORITY".to_string(),
        "EXPIRES".to_string(),
        "RESIDUAL".to_string(),
        "SHA256".to_string(),
    ]];
    for c in &pki.cas {
        let (exp, res) = match &c.cert {
            Some(x) => (
                clock::rfc3339(x.not_after),
                residual(clock::days_until(now, x.not_after)),
            ),
            None => (
                "-".into(),
                format!("ERROR: {}", c.error.clone().unwrap_or_default()),
            ),
        };
        rows.push(vec![
            c.id.name().to_string(),
            exp,
            res,
            c.sha256.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    table(out, &rows);
}
