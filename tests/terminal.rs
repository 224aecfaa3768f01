//! Text output on a real terminal (issue "The 3 a.m. view"): under a pty
//! (util-linux `script`), the status view takes the tty's width when
//! `COLUMNS` is unset, `COLUMNS` when set, and colours its verdict lines
//! only on a tty and never with `NO_COLOR`. Piped output (every golden
//! case) has no colour and 80 columns.
#![allow(clippy::disallowed_methods)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn node() -> (tempfile::TempDir, PathBuf) {
    // A renewal killed mid-restart: long lines to wrap, a verdict to colour.
    support::prelude_node(
        "base rsa; phase_v2 op-tty restart_pending kube-apiserver; stage kube-apiserver",
    )
}

/// The status view's stdout on a pty of `cols` columns, with `env` set.
fn on_tty(root: &Path, cols: u16, env: &[(&str, &str)]) -> String {
    let bin = env!("CARGO_BIN_EXE_nvke-cert-runbook");
    let inner = format!(
        "stty cols {cols} rows 50; exec {bin} --root {} --now 2026-11-30T00:00:00Z --status-only",
        root.display()
    );
    let mut c = Command::new("script");
    c.args(["-qec", &inner, "/dev/null"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TERM", "xterm");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("script(1) from util-linux");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The pty turns \n into \r\n.
    String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n")
}

fn widest(s: &str) -> usize {
    s.lines()
        .map(|l| {
            l.replace("\x1b[1;31m", "")
                .replace("\x1b[0m", "")
                .chars()
                .count()
        })
        .max()
        .unwrap()
}

#[test]
fn a_tty_gets_its_width_and_colour_and_no_color_is_respected() {
    let (_t, root) = node();
    let wide = on_tty(&root, 120, &[]);
    assert!(wide.contains("\x1b[1;31mNODE: ACTION NEEDED"), "{wide}");
    let w = widest(&wide);
    assert!(w > 80 && w <= 120, "width {w} on a 120-column tty:\n{wide}");

    let narrow = on_tty(&root, 60, &[("NO_COLOR", "1")]);
    assert!(!narrow.contains('\x1b'), "{narrow}");
    assert!(widest(&narrow) <= 60, "{narrow}");

    // COLUMNS wins over the tty's width.
    let by_env = on_tty(&root, 120, &[("COLUMNS", "70")]);
    assert!(widest(&by_env) <= 70, "{by_env}");
    // An empty NO_COLOR is no request (no-color.org).
    assert!(on_tty(&root, 100, &[("NO_COLOR", "")]).contains('\x1b'));
    assert!(!on_tty(&root, 100, &[("TERM", "dumb")]).contains('\x1b'));
}

#[test]
fn a_pipe_gets_80_columns_and_no_colour() {
    let (_t, root) = node();
    let out = support::netns::hermetic(&mut Command::new(env!("CARGO_BIN_EXE_nvke-cert-runbook")))
        .args([
            "--root",
            root.to_str().unwrap(),
            "--now",
            "2026-11-30T00:00:00Z",
            "--status-only",
        ])
        .env_clear()
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(!s.contains('\x1b'));
    assert!(widest(&s) <= 80 && widest(&s) > 70, "{s}");
}
