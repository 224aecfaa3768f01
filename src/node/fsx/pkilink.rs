//! The one symlink a walk accepts (SPEC 12, "A symlinked `pki/`"):
//! kubespray links `/etc/kubernetes/pki` to `/etc/kubernetes/ssl`.
//!
//! Resolved once per [`Root`], at the first walk of a path under
//! `etc/kubernetes/pki`, without following anything: the link's target is
//! read (`readlinkat`), taken relative to `etc/kubernetes` (or, absolute,
//! as a node path that must start with `/etc/kubernetes/`), and walked
//! component by component from `etc/kubernetes`'s descriptor with
//! `O_NOFOLLOW` (a `..` pops a directory that was itself opened no-follow,
//! so the walk is the kernel's, never a lexical guess). Accepted when:
//!
//! - the link is owned by root (when we are root, as [`Trust::Strict`]),
//!   and `etc/kubernetes`, which holds it, is owned by root and not
//!   writable by group or others (a symlink's own mode is always 0777 on
//!   Linux: whoever can write its directory can replace it);
//! - no `..` leaves `/etc/kubernetes`, and the target is a directory under
//!   it, not `/etc/kubernetes` itself;
//! - the target is no symlink and has none on its path (no chain, no loop:
//!   nothing is followed, so nothing can hang);
//! - the target and every directory on its way are owned by root and not
//!   writable by group or others, and the target is on the filesystem of
//!   `/etc/kubernetes` (`st_dev`).
//!
//! Accepted: every walk of `etc/kubernetes/pki[/...]` is a walk of the
//! target (e.g. `etc/kubernetes/ssl[/...]`), no-follow as any other, and
//! messages name the real files there. Refused: every such walk fails with
//! [`FsError::PkiLink`], naming the link, its target and the reason, in
//! every mode. A `pki` that is not a symlink (a directory, nothing, or a
//! path that cannot be walked to it) changes nothing: the walk is as it
//! always was and reports what it finds itself.

use super::{components, join, node_path, running_as_root, Dir, FsError, FsResult, Kind, Root};
use super::{vet_stat, Trust};
use crate::node::paths::PKI_DIR;
use nix::sys::stat::{fstat, FileStat};
use std::borrow::Cow;

/// What `etc/kubernetes/pki` was found to be, once per [`Root`].
#[derive(Debug)]
pub(super) enum PkiLink {
    /// Not a symlink: paths are walked as given.
    Plain,
    /// An accepted link: its target's path relative to the root.
    Target(String),
    /// A refused link: its target (as shown) and why.
    Refused { target: String, reason: String },
}

impl Root {
    /// `rel` as the walk takes it: a path under `etc/kubernetes/pki` moved
    /// to the accepted link's target, or refused with the link's reason;
    /// any other path as it is.
    pub(super) fn resolve_pki<'a>(&self, rel: &'a str) -> FsResult<Cow<'a, str>> {
        let mut comps = components(rel);
        if !components(PKI_DIR).all(|p| comps.next() == Some(p)) {
            return Ok(Cow::Borrowed(rel));
        }
        match self.pki.get_or_init(|| resolve(self)) {
            PkiLink::Plain => Ok(Cow::Borrowed(rel)),
            PkiLink::Target(target) => {
                Ok(Cow::Owned(comps.fold(target.clone(), |p, c| join(&p, c))))
            }
            PkiLink::Refused { target, reason } => Err(FsError::PkiLink {
                link: node_path(PKI_DIR),
                target: target.clone(),
                reason: reason.clone(),
            }),
        }
    }
}

impl Root {
    /// The accepted link's target relative to the root (`etc/kubernetes/ssl`
    /// for kubespray's), None when `pki` is no accepted link: a file a flag
    /// names under it is the same file as under `etc/kubernetes/pki`.
    pub fn pki_link_target(&self) -> Option<&str> {
        match self.pki.get_or_init(|| resolve(self)) {
            PkiLink::Target(target) => Some(target),
            _ => None,
        }
    }
}

/// Look at `etc/kubernetes/pki` once.
fn resolve(root: &Root) -> PkiLink {
    let (kube_rel, name) = PKI_DIR.rsplit_once('/').expect("pki has a parent");
    // Anything but a symlink there (or a way there that cannot be walked):
    // the walk itself reports it, as it always did.
    let Ok(Some(kube)) = root.walk_dir(kube_rel, Trust::TypeOnly) else {
        return PkiLink::Plain;
    };
    let Ok(Some(link)) = kube.stat_entry(name) else {
        return PkiLink::Plain;
    };
    if Kind::of(&link) != Kind::Symlink {
        return PkiLink::Plain;
    }
    let raw = match kube.read_link(name) {
        Ok(Some(raw)) => raw,
        Ok(None) => return PkiLink::Plain,
        Err(e) => {
            return PkiLink::Refused {
                target: "a target that cannot be read".into(),
                reason: e.to_string(),
            }
        }
    };
    let target = shown(&raw, kube_rel);
    match accept(&kube, &link, &raw) {
        Ok(dir) => {
            tracing::info!(
                "{} is a symlink to {target}: the PKI is read and written in {} (no-follow)",
                node_path(PKI_DIR),
                dir.path()
            );
            PkiLink::Target(dir.rel)
        }
        Err(reason) => PkiLink::Refused { target, reason },
    }
}

/// The target as the link holds it; a relative one with the node path it
/// names (lexically, for the message only).
fn shown(raw: &str, kube_rel: &str) -> String {
    if raw.starts_with('/') {
        raw.to_string()
    } else {
        format!("{raw} ({})", node_path(&lexical(raw, kube_rel)))
    }
}

/// The path (relative to the root) a link target names, by its text alone:
/// `..` pops, never below the root. Never used to walk: only to word a
/// refusal.
fn lexical(raw: &str, kube_rel: &str) -> String {
    let mut path: Vec<&str> = if raw.starts_with('/') {
        Vec::new()
    } else {
        components(kube_rel).collect()
    };
    for c in components(raw) {
        if c == ".." {
            path.pop();
        } else {
            path.push(c);
        }
    }
    path.join("/")
}

/// The target directory, or why the link is refused (a phrase that follows
/// "`/etc/kubernetes/pki` is a symlink to `<target>`, ").
fn accept(kube: &Dir, link: &FileStat, raw: &str) -> Result<Dir, String> {
    if running_as_root() && link.st_uid != 0 {
        return Err(format!(
            "and the link is owned by uid {}, not root",
            link.st_uid
        ));
    }
    let kube_st = stat_dir(kube)?;
    if let Err(e) = vet_stat(&kube.path(), &kube_st, Kind::Dir, Trust::Strict) {
        return Err(format!("and the directory that holds the link: {e}"));
    }
    let outside = || {
        let named = lexical(raw, &kube.rel);
        let depth = components(&kube.rel).count();
        if components(&named).count() > depth
            && components(&named).take(depth).eq(components(&kube.rel))
        {
            format!("outside {} on its way (a `..` leaves it)", kube.path())
        } else {
            format!("outside {}", kube.path())
        }
    };
    let rest: Vec<&str> = if raw.starts_with('/') {
        let mut comps = components(raw);
        if !components(&kube.rel).all(|k| comps.next() == Some(k)) {
            return Err(outside());
        }
        comps.collect()
    } else {
        components(raw).collect()
    };
    // The directories from `etc/kubernetes` (excluded) to the target, each
    // opened no-follow from the one before.
    let mut path: Vec<Dir> = Vec::new();
    for (i, &c) in rest.iter().enumerate() {
        if c == ".." {
            if path.pop().is_none() {
                return Err(outside());
            }
            continue;
        }
        let last = i + 1 == rest.len();
        let here = path.last().unwrap_or(kube);
        match here.open_subdir(c, Trust::TypeOnly) {
            Ok(Some(d)) => path.push(d),
            Ok(None) if last => return Err("which does not exist (a dangling link)".into()),
            Ok(None) => {
                return Err(format!(
                    "which does not exist ({} does not)",
                    here.entry_path(c)
                ))
            }
            Err(FsError::Symlink { path: p }) if p == node_path(PKI_DIR) => {
                return Err("a link that leads back to itself (a loop)".into())
            }
            Err(FsError::Symlink { path: p }) if last => {
                return Err(format!("a link to a link ({p} is a symlink)"))
            }
            Err(FsError::Symlink { path: p }) => {
                return Err(format!("which has a symlink on its path ({p})"))
            }
            Err(FsError::WrongType { found, .. }) if last => {
                return Err(format!("which is a {}, not a directory", found.as_str()))
            }
            Err(FsError::WrongType { path: p, found, .. }) => {
                return Err(format!("which has a {} on its path ({p})", found.as_str()))
            }
            Err(e) => return Err(format!("which cannot be walked ({e})")),
        }
    }
    let Some(target) = path.pop() else {
        return Err(format!(
            "which is {} itself, not a directory under it",
            kube.path()
        ));
    };
    for d in &path {
        let st = stat_dir(d)?;
        if let Err(e) = vet_stat(&d.path(), &st, Kind::Dir, Trust::Strict) {
            return Err(format!(
                "which has a directory on its path that is refused: {e}"
            ));
        }
    }
    let st = stat_dir(&target)?;
    match vet_stat(&target.path(), &st, Kind::Dir, Trust::Strict) {
        Err(FsError::NotRootOwned { uid, .. }) => {
            return Err(format!("which is owned by uid {uid}, not root"))
        }
        Err(FsError::Writable { mode, .. }) => {
            return Err(format!(
                "which is writable by group or others (mode {:04o})",
                mode & 0o7777
            ))
        }
        Err(e) => return Err(format!("which is refused: {e}")),
        Ok(()) => {}
    }
    if st.st_dev != kube_st.st_dev {
        return Err(format!(
            "which is on another filesystem than {}",
            kube.path()
        ));
    }
    Ok(target)
}

fn stat_dir(d: &Dir) -> Result<FileStat, String> {
    fstat(&d.fd).map_err(|e| format!("and {} cannot be stat'ed: {}", d.path(), e.desc()))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::print_stderr)] // tests plant and read files to check the layer
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::path::{Path, PathBuf};

    /// A node with `etc/kubernetes/ssl/{ca.crt,etcd/server.crt}` (0755
    /// directories) and no `pki` yet.
    fn node() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let k = t.path().join("etc/kubernetes");
        std::fs::create_dir_all(k.join("ssl/etcd")).unwrap();
        for d in [
            "etc",
            "etc/kubernetes",
            "etc/kubernetes/ssl",
            "etc/kubernetes/ssl/etcd",
        ] {
            chmod(&t.path().join(d), 0o755);
        }
        std::fs::write(k.join("ssl/ca.crt"), b"CA").unwrap();
        std::fs::write(k.join("ssl/etcd/server.crt"), b"S1").unwrap();
        (t, k)
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Every walk under `pki/` refused with the same message, which is
    /// returned; nothing created anywhere.
    fn refused(t: &tempfile::TempDir) -> String {
        let root = Root::open(t.path()).unwrap();
        let msg = match root.read_file("etc/kubernetes/pki/ca.crt", 100, Trust::TypeOnly) {
            Err(e @ FsError::PkiLink { .. }) => e.to_string(),
            other => panic!("not refused: {other:?}"),
        };
        for r in [
            root.open_dir("etc/kubernetes/pki", Trust::TypeOnly)
                .map(|_| ()),
            root.open_dir("/etc/kubernetes/pki/etcd/", Trust::TypeOnly)
                .map(|_| ()),
            root.create_dir_all("etc/kubernetes/pki/new", 0o755, Trust::TypeOnly)
                .map(|_| ()),
            root.modified("etc/kubernetes/pki/etcd/server.crt")
                .map(|_| ()),
        ] {
            assert_eq!(r.unwrap_err().to_string(), msg);
        }
        // Paths beside pki/ are walked as before.
        assert!(root
            .open_dir("etc/kubernetes", Trust::TypeOnly)
            .unwrap()
            .is_some());
        assert_eq!(
            root.read_file("etc/kubernetes/ssl/ca.crt", 100, Trust::TypeOnly)
                .ok()
                .flatten()
                .as_deref(),
            std::fs::read(t.path().join("etc/kubernetes/ssl/ca.crt"))
                .ok()
                .as_deref()
        );
        assert!(!t.path().join("etc/kubernetes/ssl/new").exists());
        msg
    }

    /// Every walk under `pki/` is a walk of `ssl/`.
    fn accepted(t: &tempfile::TempDir) {
        let root = Root::open(t.path()).unwrap();
        assert_eq!(
            root.read_file("etc/kubernetes/pki/ca.crt", 100, Trust::TypeOnly)
                .unwrap()
                .unwrap(),
            b"CA"
        );
        assert_eq!(
            root.read_file("/etc/kubernetes/pki/etcd/server.crt", 100, Trust::TypeOnly)
                .unwrap()
                .unwrap(),
            b"S1"
        );
        let etcd = root
            .open_dir("etc/kubernetes/pki/etcd", Trust::TypeOnly)
            .unwrap()
            .unwrap();
        assert_eq!(etcd.path(), "/etc/kubernetes/ssl/etcd");
        let pki = root
            .open_dir("etc/kubernetes/pki", Trust::Strict)
            .unwrap()
            .unwrap();
        assert_eq!(pki.path(), "/etc/kubernetes/ssl");
        let new = root
            .create_dir_all("etc/kubernetes/pki/new", 0o755, Trust::TypeOnly)
            .unwrap();
        assert_eq!(new.path(), "/etc/kubernetes/ssl/new");
        assert!(t.path().join("etc/kubernetes/ssl/new").is_dir());
        assert!(root
            .modified("etc/kubernetes/pki/ca.crt")
            .unwrap()
            .is_some());
        // The link itself is the entry `pki`, as lstat sees it.
        let (kube, name) = root.open_parent("etc/kubernetes/pki").unwrap().unwrap();
        assert_eq!(kube.kind_of(name).unwrap(), Some(Kind::Symlink));
        // Any other symlink on a path is still refused.
        symlink("ssl", t.path().join("etc/kubernetes/other")).unwrap();
        assert!(matches!(
            root.read_file("etc/kubernetes/other/ca.crt", 100, Trust::TypeOnly),
            Err(FsError::Symlink { .. })
        ));
        symlink("ca.crt", t.path().join("etc/kubernetes/ssl/ca-link.crt")).unwrap();
        assert!(matches!(
            root.read_file("etc/kubernetes/pki/ca-link.crt", 100, Trust::TypeOnly),
            Err(FsError::Symlink { ref path }) if path == "/etc/kubernetes/ssl/ca-link.crt"
        ));
        assert!(
            std::fs::symlink_metadata(t.path().join("etc/kubernetes/pki"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    fn link(t: &tempfile::TempDir, target: &str) {
        symlink(target, t.path().join("etc/kubernetes/pki")).unwrap();
    }

    #[test]
    fn a_plain_pki_directory_is_walked_as_before() {
        let (t, k) = node();
        std::fs::create_dir(k.join("pki")).unwrap();
        std::fs::write(k.join("pki/ca.crt"), b"PLAIN").unwrap();
        let root = Root::open(t.path()).unwrap();
        assert_eq!(
            root.read_file("etc/kubernetes/pki/ca.crt", 100, Trust::TypeOnly)
                .unwrap()
                .unwrap(),
            b"PLAIN"
        );
        assert!(matches!(root.pki.get(), Some(PkiLink::Plain)));
        // No pki at all: missing, as before.
        let (t, _) = node();
        let root = Root::open(t.path()).unwrap();
        assert!(root
            .read_file("etc/kubernetes/pki/ca.crt", 100, Trust::TypeOnly)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_relative_link_to_a_directory_under_etc_kubernetes_is_accepted() {
        let (t, _) = node();
        link(&t, "ssl");
        accepted(&t);
        for target in ["./ssl/", "ssl/etcd/..", "ssl//."] {
            let (t, _) = node();
            link(&t, target);
            accepted(&t);
        }
    }

    #[test]
    fn an_absolute_link_is_a_node_path_under_the_root() {
        let (t, _) = node();
        link(&t, "/etc/kubernetes/ssl");
        accepted(&t);
    }

    #[test]
    fn a_link_outside_etc_kubernetes_is_refused() {
        for (target, shown) in [
            ("../../srv/pki", "../../srv/pki (/srv/pki)"),
            ("/srv/pki", "/srv/pki"),
            (
                "/etc/kubernetes/../../srv/pki",
                "/etc/kubernetes/../../srv/pki",
            ),
            ("/etc/kubernetesx/ssl", "/etc/kubernetesx/ssl"),
        ] {
            let (t, _) = node();
            std::fs::create_dir_all(t.path().join("srv/pki")).unwrap();
            std::fs::write(t.path().join("srv/pki/ca.crt"), b"OUT").unwrap();
            link(&t, target);
            assert_eq!(
                refused(&t),
                format!(
                    "/etc/kubernetes/pki is a symlink to {shown}, outside /etc/kubernetes: refused"
                )
            );
        }
        let (t, _) = node();
        link(&t, "../kubernetes/ssl");
        assert_eq!(
            refused(&t),
            "/etc/kubernetes/pki is a symlink to ../kubernetes/ssl (/etc/kubernetes/ssl), outside /etc/kubernetes on its way (a `..` leaves it): refused"
        );
        for target in [".", "/etc/kubernetes", "ssl/.."] {
            let (t, _) = node();
            link(&t, target);
            assert!(
                refused(&t).ends_with(
                    ", which is /etc/kubernetes itself, not a directory under it: refused"
                ),
                "{target}"
            );
        }
    }

    #[test]
    fn a_group_or_world_writable_target_is_refused() {
        for (mode, shown) in [(0o775, "0775"), (0o757, "0757"), (0o1777, "1777")] {
            let (t, k) = node();
            chmod(&k.join("ssl"), mode);
            link(&t, "ssl");
            assert_eq!(
                refused(&t),
                format!("/etc/kubernetes/pki is a symlink to ssl (/etc/kubernetes/ssl), which is writable by group or others (mode {shown}): refused")
            );
        }
        // A writable directory on the way to it.
        let (t, k) = node();
        std::fs::create_dir(k.join("certs")).unwrap();
        chmod(&k.join("certs"), 0o777);
        std::fs::rename(k.join("ssl"), k.join("certs/ssl")).unwrap();
        link(&t, "certs/ssl");
        let msg = refused(&t);
        assert!(
            msg.contains("which has a directory on its path that is refused: /etc/kubernetes/certs is writable by group or others (mode 0777)"),
            "{msg}"
        );
        // The directory that holds the link: whoever writes it can replace it.
        let (t, k) = node();
        link(&t, "ssl");
        chmod(&k, 0o775);
        let msg = refused(&t);
        assert!(
            msg.contains("and the directory that holds the link: /etc/kubernetes is writable by group or others (mode 0775)"),
            "{msg}"
        );
    }

    #[test]
    fn links_to_links_and_loops_are_refused_without_following() {
        let (t, k) = node();
        symlink("ssl", k.join("ssl2")).unwrap();
        link(&t, "ssl2");
        assert_eq!(
            refused(&t),
            "/etc/kubernetes/pki is a symlink to ssl2 (/etc/kubernetes/ssl2), a link to a link (/etc/kubernetes/ssl2 is a symlink): refused"
        );
        // A link on the target's path.
        let (t, k) = node();
        symlink(".", k.join("here")).unwrap();
        link(&t, "here/ssl");
        assert!(refused(&t)
            .contains(", which has a symlink on its path (/etc/kubernetes/here): refused"));
        // A link to itself, absolute or relative, and through itself.
        for target in ["pki", "/etc/kubernetes/pki", "./pki/etcd"] {
            let (t, _) = node();
            link(&t, target);
            assert!(
                refused(&t).ends_with(", a link that leads back to itself (a loop): refused"),
                "{target}"
            );
        }
        // Two links to each other.
        let (t, k) = node();
        symlink("pki", k.join("ssl3")).unwrap();
        link(&t, "ssl3");
        assert!(refused(&t).contains("a link to a link (/etc/kubernetes/ssl3 is a symlink)"));
    }

    #[test]
    fn a_target_that_is_no_directory_or_missing_is_refused() {
        let (t, k) = node();
        std::fs::write(k.join("ssl.crt"), b"x").unwrap();
        link(&t, "ssl.crt");
        assert_eq!(
            refused(&t),
            "/etc/kubernetes/pki is a symlink to ssl.crt (/etc/kubernetes/ssl.crt), which is a regular file, not a directory: refused"
        );
        let (t, k) = node();
        nix::unistd::mkfifo(
            &k.join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        link(&t, "fifo");
        assert!(refused(&t).contains("which is a FIFO, not a directory"));
        let (t, _) = node();
        link(&t, "gone");
        assert_eq!(
            refused(&t),
            "/etc/kubernetes/pki is a symlink to gone (/etc/kubernetes/gone), which does not exist (a dangling link): refused"
        );
        let (t, _) = node();
        link(&t, "gone/ssl");
        assert!(refused(&t).contains("which does not exist (/etc/kubernetes/gone does not)"));
    }

    /// Ownership is checked when we are root (as `Trust::Strict`).
    #[test]
    fn a_link_or_target_not_owned_by_root_is_refused() {
        if !running_as_root() {
            eprintln!("skipped: chown needs root");
            return;
        }
        let (t, k) = node();
        link(&t, "ssl");
        std::os::unix::fs::lchown(k.join("pki"), Some(1000), Some(1000)).unwrap();
        assert!(refused(&t).ends_with(
            "to ssl (/etc/kubernetes/ssl), and the link is owned by uid 1000, not root: refused"
        ));
        let (t, k) = node();
        link(&t, "ssl");
        std::os::unix::fs::chown(k.join("ssl"), Some(1000), Some(1000)).unwrap();
        assert!(refused(&t).ends_with(", which is owned by uid 1000, not root: refused"));
    }

    /// A target on another filesystem: a tmpfs mounted at `ssl/`. Needs
    /// root and mount(8): skipped otherwise.
    #[test]
    fn a_target_on_another_filesystem_is_refused() {
        let (t, k) = node();
        let ssl = k.join("ssl");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "mode=0755,size=64k", "nvke-pki"])
            .arg(&ssl)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("skipped the mounted case: mount -t tmpfs failed (needs root)");
            return;
        }
        struct Unmount(PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg(&self.0).status();
            }
        }
        let _unmount = Unmount(ssl.clone());
        std::fs::write(ssl.join("ca.crt"), b"CA").unwrap();
        link(&t, "ssl");
        assert_eq!(
            refused(&t),
            "/etc/kubernetes/pki is a symlink to ssl (/etc/kubernetes/ssl), which is on another filesystem than /etc/kubernetes: refused"
        );
    }
}
