//! Node trees on disk: fixture copies with kubeadm's modes (or the modes
//! found), and snapshots of a whole tree (every path, never following a
//! symlink, never opening a FIFO) compared before and after a run.

use super::hex::sha256_hex;
use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Writes an executable script (mode 0755, parents made), from a child
/// process. A write descriptor opened in this multi-threaded test process
/// leaks, between fork and exec, into any child that a parallel test thread
/// is starting; while such a child holds it, exec of the script fails with
/// ETXTBSY ("Text file busy"). Written by `/bin/sh`, no descriptor of ours
/// ever names the file.
pub fn write_executable(p: &Path, text: &str) {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let st = std::process::Command::new("/bin/sh")
        .args(["-c", r#"printf '%s' "$2" > "$1" && chmod 0755 "$1""#, "sh"])
        .arg(p)
        .arg(text)
        .status()
        .unwrap();
    assert!(st.success(), "writing {}: {st}", p.display());
}

/// The permission bits of `p` (lstat).
pub fn mode_of(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// Copies a fixture tree with kubeadm's modes (git keeps none): keys and
/// kubeconfigs 0600, the rest 0644, directories 0755.
pub fn copy_tree(src: &Path, dst: &Path) {
    try_copy_tree(src, dst).unwrap()
}

/// [`copy_tree`], for callers that report errors (the e2e lab); each error
/// names its path.
pub fn try_copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    let named = |what: &str, p: &Path| {
        let p = p.display().to_string();
        let what = what.to_string();
        move |e: std::io::Error| std::io::Error::new(e.kind(), format!("{what} {p}: {e}"))
    };
    let set_mode = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
            .map_err(named("chmod", p))
    };
    std::fs::create_dir_all(dst).map_err(named("create", dst))?;
    set_mode(dst, 0o755)?;
    for e in std::fs::read_dir(src).map_err(named("read", src))? {
        let e = e.map_err(named("read", src))?;
        let to = dst.join(e.file_name());
        if e.file_type().map_err(named("stat", &e.path()))?.is_dir() {
            try_copy_tree(&e.path(), &to)?;
        } else {
            std::fs::copy(e.path(), &to).map_err(named("copy", &e.path()))?;
            let name = to.file_name().unwrap_or_default().to_string_lossy();
            let mode = if name.ends_with(".key") || name.ends_with(".conf") {
                0o600
            } else {
                0o644
            };
            set_mode(&to, mode)?;
        }
    }
    Ok(())
}

/// Copies a tree keeping each file's and directory's mode ([`copy_tree`]
/// sets kubeadm's modes instead); only directories and regular files.
pub fn copy_exact(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    chmod(dst, mode_of(src));
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            copy_exact(&e.path(), &to);
        } else if ft.is_file() {
            std::fs::copy(e.path(), &to).unwrap();
            chmod(&to, mode_of(&e.path()));
        }
    }
}

// ---------------------------------------------------------------------------
// Snapshots.

/// One path as found (lstat): what "nothing changed" compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `d`, `f`, `l` (symlink), `p` (FIFO), `s` (socket), `b`, `c`
    /// (devices), `?`.
    pub kind: char,
    /// The permission bits (`mode & 0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// sha256 (hex) of a regular file's bytes (`unreadable` if they cannot
    /// be read); empty for anything else.
    pub sha256: String,
    /// A symlink's target, exactly.
    pub target: Option<PathBuf>,
    /// With `stamps`: (mtime, mtime_nsec, inode), so that a rewrite with the
    /// same bytes, a touch, or a replacement shows too.
    pub stamp: Option<(i64, i64, u64)>,
}

/// Every path under a base, relative to it (the base itself is `.`), in
/// path order: a directory's entries by name, each right after it.
pub type Snapshot = BTreeMap<PathBuf, Entry>;

/// The entry for `p` (lstat, never followed); `None` if it is not there.
pub fn entry(p: &Path, stamps: bool) -> Option<Entry> {
    let md = std::fs::symlink_metadata(p).ok()?;
    let ft = md.file_type();
    let kind = if ft.is_symlink() {
        'l'
    } else if ft.is_dir() {
        'd'
    } else if ft.is_file() {
        'f'
    } else if ft.is_fifo() {
        'p'
    } else if ft.is_socket() {
        's'
    } else if ft.is_block_device() {
        'b'
    } else if ft.is_char_device() {
        'c'
    } else {
        '?'
    };
    let sha256 = match kind {
        'f' => std::fs::read(p)
            .map(|b| sha256_hex(&b))
            .unwrap_or_else(|_| "unreadable".to_string()),
        _ => String::new(),
    };
    let target = if kind == 'l' {
        std::fs::read_link(p).ok()
    } else {
        None
    };
    Some(Entry {
        kind,
        mode: md.mode() & 0o7777,
        uid: md.uid(),
        gid: md.gid(),
        sha256,
        target,
        stamp: stamps.then(|| (md.mtime(), md.mtime_nsec(), md.ino())),
    })
}

/// Every path under `base` (and `base` itself as `.`), never following a
/// symlink, never opening a FIFO. A directory that cannot be listed is
/// there with no entries under it.
pub fn snapshot(base: &Path, stamps: bool) -> Snapshot {
    fn walk(base: &Path, dir: &Path, stamps: bool, out: &mut Snapshot) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for p in rd.filter_map(|e| e.ok().map(|e| e.path())) {
            if let Some(e) = entry(&p, stamps) {
                let is_dir = e.kind == 'd';
                out.insert(p.strip_prefix(base).unwrap().to_path_buf(), e);
                if is_dir {
                    walk(base, &p, stamps, out);
                }
            }
        }
    }
    let mut out = Snapshot::new();
    if let Some(e) = entry(base, stamps) {
        out.insert(PathBuf::from("."), e);
    }
    walk(base, base, stamps, &mut out);
    out
}

/// (path, what happened) for every difference: `removed`, `added`, or
/// `changed <before> -> <after>`.
pub fn diff(a: &Snapshot, b: &Snapshot) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => out.push((k.display().to_string(), "removed".to_string())),
            Some(w) if w != v => {
                out.push((k.display().to_string(), format!("changed {v:?} -> {w:?}")))
            }
            _ => {}
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            out.push((k.display().to_string(), "added".to_string()));
        }
    }
    out
}

/// Every directory of the tree at `top` (`top` first).
pub fn all_dirs(top: &Path) -> Vec<PathBuf> {
    let mut v = vec![top.to_path_buf()];
    for (rel, e) in snapshot(top, false) {
        if e.kind == 'd' && rel != Path::new(".") {
            v.push(top.join(rel));
        }
    }
    v
}

/// Re-signs the leaf `crt` (its key, subject and extensions kept) with the
/// CA `ca_crt`/`ca_key`, valid from `start` to `end` (openssl's
/// `YYYYMMDDHHMMSSZ`): `openssl ca`, since `x509 -req` in OpenSSL 3.0 can
/// only date a certificate from now. For certificates that have already
/// expired (SPEC 11's recovery), and for their renewal by hand.
pub fn resign(ca_crt: &Path, ca_key: &Path, crt: &Path, key: &Path, start: &str, end: &str) {
    resign_with_sans(ca_crt, ca_key, crt, key, (start, end), None);
}

/// [`resign`], with `sans` (openssl's `subjectAltName` value) in place of
/// the leaf's own when given: a certificate as kubeadm issues it for
/// another node address.
pub fn resign_with_sans(
    ca_crt: &Path,
    ca_key: &Path,
    crt: &Path,
    key: &Path,
    (start, end): (&str, &str),
    sans: Option<&str>,
) {
    let work = tempfile::Builder::new()
        .prefix("nvke-resign-")
        .tempdir_in("/tmp")
        .unwrap();
    let w = work.path();
    std::fs::write(w.join("index.txt"), "").unwrap();
    std::fs::write(w.join("serial"), "7A01\n").unwrap();
    // With `sans`: the section's subjectAltName first, the request's other
    // extensions copied (`copy` keeps one already there).
    let (copy, ext) = match sans {
        Some(v) => (
            "copy",
            format!("x509_extensions = ext\n[ext]\nsubjectAltName = {v}\n"),
        ),
        None => ("copyall", String::new()),
    };
    let cnf = format!(
        "[ca]\ndefault_ca = ca_default\n[ca_default]\ndatabase = {d}/index.txt\n\
         new_certs_dir = {d}\nserial = {d}/serial\npolicy = any\n\
         copy_extensions = {copy}\nunique_subject = no\ndefault_md = sha256\n\
         {ext}[any]\ncommonName = optional\norganizationName = optional\n",
        d = w.display()
    );
    std::fs::write(w.join("ca.cnf"), cnf).unwrap();
    let openssl = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let csr = w.join("req.csr");
    let new = w.join("new.crt");
    openssl(&[
        "x509".as_ref(),
        "-x509toreq".as_ref(),
        "-copy_extensions".as_ref(),
        "copyall".as_ref(),
        "-in".as_ref(),
        crt.as_os_str(),
        "-signkey".as_ref(),
        key.as_os_str(),
        "-out".as_ref(),
        csr.as_os_str(),
    ]);
    openssl(&[
        "ca".as_ref(),
        "-batch".as_ref(),
        "-notext".as_ref(),
        "-preserveDN".as_ref(),
        "-config".as_ref(),
        w.join("ca.cnf").as_os_str(),
        "-cert".as_ref(),
        ca_crt.as_os_str(),
        "-keyfile".as_ref(),
        ca_key.as_os_str(),
        "-startdate".as_ref(),
        start.as_ref(),
        "-enddate".as_ref(),
        end.as_ref(),
        "-in".as_ref(),
        csr.as_os_str(),
        "-out".as_ref(),
        new.as_os_str(),
    ]);
    // Replaced in place, as kubeadm writes it (mode kept).
    std::fs::write(crt, std::fs::read(&new).unwrap()).unwrap();
}
