//! The tar format (POSIX ustar, with a pax `path` record for names over 100
//! bytes), written by hand: every header field is ours.

use super::TOP;
use crate::node::paths::STATE_FILE_MODE;

pub(super) const BLOCK: usize = 512;

fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let s = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&s.as_bytes()[s.len() - digits..]);
    field[digits] = 0;
}

/// One ustar header: mode 0600, uid/gid 0 (root/root), `kind` `0` (file) or
/// `x` (pax extended header).
fn header(name: &str, size: u64, mtime: u64, kind: u8) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let n = name.as_bytes();
    let n = &n[..n.len().min(100)];
    h[..n.len()].copy_from_slice(n);
    octal(&mut h[100..108], u64::from(STATE_FILE_MODE));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime.min(0o77777777777));
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[265..269].copy_from_slice(b"root");
    h[297..301].copy_from_slice(b"root");
    octal(&mut h[329..337], 0);
    octal(&mut h[337..345], 0);
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// A pax record `"<len> path=<name>\n"`, `<len>` counting itself.
pub(super) fn pax_path(name: &str) -> Vec<u8> {
    let body = format!(" path={name}\n");
    let mut len = body.len() + 1;
    while format!("{len}").len() + body.len() != len {
        len = format!("{len}").len() + body.len();
    }
    format!("{len}{body}").into_bytes()
}

fn pad(out: &mut Vec<u8>) {
    let rem = out.len() % BLOCK;
    if rem != 0 {
        out.resize(out.len() + BLOCK - rem, 0);
    }
}

/// The tar of `files` (name, bytes, mtime), in order, with its end blocks.
pub(super) fn tar(files: &[(&str, &[u8], u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, bytes, mtime) in files {
        if name.len() > 100 {
            let rec = pax_path(name);
            out.extend_from_slice(&header(
                &format!("{TOP}/PaxHeader"),
                rec.len() as u64,
                *mtime,
                b'x',
            ));
            out.extend_from_slice(&rec);
            pad(&mut out);
        }
        out.extend_from_slice(&header(name, bytes.len() as u64, *mtime, b'0'));
        out.extend_from_slice(bytes);
        pad(&mut out);
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    out
}
