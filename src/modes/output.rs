//! Writing results: one JSON object or a short text for people, written once
//! to stdout. A closed stdout (EPIPE: the SSH session is gone) is ignored,
//! never a reason to stop or panic; a stdout nobody reads (a pipe that stays
//! full) is given [`STDOUT_BUDGET`] and then abandoned, so the process still
//! exits (SPEC 8, v1.1). Before the result, the logs get a bounded moment to
//! reach stderr ([`crate::node::oplog::settle`]).

use crate::contract::{self, LeafStatus};
use crate::node::manifests::ManifestsReport;
use crate::rules::component::Component;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// How long the result may take to reach stdout before it is given up.
pub const STDOUT_BUDGET: Duration = Duration::from_secs(10);
/// How long the logs may take to reach stderr before the result is written.
const LOGS_FIRST: Duration = Duration::from_secs(1);
/// At most this much per write(2): no more than a pipe guarantees room for
/// once poll(2) says it is writable, so a write after POLLOUT does not block.
const CHUNK: usize = 4096;

/// What a mode produced: its exit code, its document (typed; its trailer
/// is stamped by `modes::app`) and its text.
#[derive(Debug)]
pub struct Report {
    pub code: u8,
    pub doc: Box<dyn contract::Printed>,
    pub text: String,
}

impl Report {
    /// The document as built, as JSON (the unit tests read it).
    #[cfg(test)]
    pub fn json(&self) -> serde_json::Value {
        self.doc.to_json()
    }
}

/// Write one JSON line (`contract::line`) to stdout.
pub fn emit_json(line: Vec<u8>) {
    emit_stdout(line);
}

pub fn emit_text(s: &str) {
    let mut b = s.as_bytes().to_vec();
    if !s.ends_with('\n') {
        b.push(b'\n');
    }
    emit_stdout(b);
}

/// The result to fd 1, bounded: poll(2) for room and write as it comes,
/// until [`STDOUT_BUDGET`] has passed. fd 1's flags are never changed (its
/// open file description is shared with the caller). The writing happens
/// on a helper thread that this one waits for at most the budget, so even a
/// write(2) that blocks after POLLOUT (a tty stopped with ^S, another
/// writer racing for the pipe) cannot hold the process: it exits and the
/// helper goes with it.
fn emit_stdout(bytes: Vec<u8>) {
    crate::node::oplog::settle(LOGS_FIRST);
    let deadline = Instant::now() + STDOUT_BUDGET;
    let bytes = std::sync::Arc::new(bytes);
    let (tx, rx) = std::sync::mpsc::channel();
    let theirs = std::sync::Arc::clone(&bytes);
    let spawned = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || {
            write_bounded(std::io::stdout().as_fd(), &theirs, deadline);
            let _ = tx.send(());
        });
    match spawned {
        Ok(_) => {
            let _ = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        }
        // No thread: the same bounded write here (poll keeps it bounded on
        // a pipe).
        Err(_) => {
            write_bounded(std::io::stdout().as_fd(), &bytes, deadline);
        }
    }
}

/// Write `buf` to `fd` until done, an error (EPIPE: the reader is gone), or
/// `deadline`. Returns the bytes written.
pub fn write_bounded(fd: BorrowedFd<'_>, mut buf: &[u8], deadline: Instant) -> usize {
    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let total = buf.len();
    while !buf.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        // Round up: a poll of 0 ms would spin.
        let ms = u16::try_from(left.as_millis().clamp(1, 1000)).unwrap_or(1000);
        let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => break,
        }
        let rev = fds[0].revents().unwrap_or(PollFlags::empty());
        if rev.intersects(PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL)
            && !rev.contains(PollFlags::POLLOUT)
        {
            break;
        }
        let n = buf.len().min(CHUNK);
        match nix::unistd::write(fd, &buf[..n]) {
            Ok(0) => break,
            Ok(k) => buf = &buf[k..],
            Err(Errno::EINTR) | Err(Errno::EAGAIN) => {}
            Err(_) => break,
        }
    }
    total - buf.len()
}

/// Write to stderr, ignoring a closed stderr.
pub fn emit_stderr(s: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
}

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
        rows.push(vec!["NODE AGENT".to_string(), agent.to_string()]);
    }
    for c in Component::ALL {
        rows.push(vec![c.manifest_file(), manifest_cell(m, c)]);
    }
    for (v, who) in [
        (&m.runbook_staging, "STAGING"),
        (&m.agent_staging, "AGENT STAGING"),
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
    // Why each is a stray is among the warnings.
    for s in &m.strays {
        rows.push(vec!["STRAY".to_string(), s.path.clone()]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::OwnedFd;

    fn fill(w: &OwnedFd) -> usize {
        // The test's own pipe: non-blocking only while it is filled.
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let fl = OFlag::from_bits_truncate(fcntl(w, FcntlArg::F_GETFL).unwrap());
        fcntl(w, FcntlArg::F_SETFL(fl | OFlag::O_NONBLOCK)).unwrap();
        let mut n = 0;
        while let Ok(k) = nix::unistd::write(w, &[b'x'; 4096]) {
            n += k;
        }
        fcntl(w, FcntlArg::F_SETFL(fl)).unwrap();
        n
    }

    #[test]
    fn a_full_pipe_nobody_reads_is_given_up_at_the_deadline() {
        let (_r, w) = nix::unistd::pipe().unwrap();
        assert!(fill(&w) >= 4096);
        let t = Instant::now();
        let n = write_bounded(w.as_fd(), b"{}\n", t + Duration::from_millis(300));
        assert_eq!(n, 0);
        assert!(t.elapsed() >= Duration::from_millis(290));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }

    #[test]
    fn a_large_result_goes_out_as_the_reader_reads_it() {
        let (r, w) = nix::unistd::pipe().unwrap();
        let big = vec![b'y'; 300 * 1024];
        let reader = std::thread::spawn(move || {
            let mut f = std::fs::File::from(r);
            let mut got = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut got).unwrap();
            got.len()
        });
        let n = write_bounded(w.as_fd(), &big, Instant::now() + Duration::from_secs(20));
        drop(w);
        assert_eq!((n, reader.join().unwrap()), (big.len(), big.len()));
    }

    #[test]
    fn a_closed_reader_ends_the_write_at_once() {
        let (r, w) = nix::unistd::pipe().unwrap();
        drop(r);
        let t = Instant::now();
        let n = write_bounded(w.as_fd(), b"{}\n", t + Duration::from_secs(5));
        assert_eq!(n, 0);
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
