//! The host directories a lab's nodes mount over (`/etc/kubernetes`,
//! `/var/lib/nvke`, `/var/lib/etcd`): a bind mount needs its mount point to
//! exist on the host, so a lab creates the missing ones (with any missing
//! parent), and the last lab out removes what the labs created, and only
//! that: a directory that existed before is never removed, nor one that is
//! no longer the directory a lab made (its inode is written down), nor one
//! that is not empty.
//!
//! Labs of other test processes (other worktrees, a second `cargo test`)
//! may share the host: every process with a lab alive holds a flock on a
//! lock file shared; when its last lab goes (also while unwinding from a
//! failed assertion: [`MountPoints`] is a Drop guard) it tries the lock
//! exclusive, and only when no other run holds it (removing a directory
//! another run uses as a mount point would detach its mounts) removes the
//! directories written down. A run that was SIGKILLed leaves them written
//! down: the next lab that finds itself alone removes them first.

use anyhow::{Context, Result};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

/// The host's: paths a node's mount namespace replaces, and the labs'
/// lock and record under `/run`.
pub static HOST: LazyLock<MountPointSet> = LazyLock::new(|| {
    MountPointSet::new(
        &["/etc/kubernetes", "/var/lib/nvke", "/var/lib/etcd"],
        "/run/nvke-e2e-mount-points.lock",
        "/run/nvke-e2e-mount-points.created",
    )
});

/// Mount points, with the lock every process with a lab alive holds shared
/// and the record of the directories the labs created (`inode path`, one a
/// line).
pub struct MountPointSet {
    points: Vec<PathBuf>,
    lock: PathBuf,
    record: PathBuf,
    /// This process's labs alive, and its shared lock while there are any.
    users: Mutex<(usize, Option<File>)>,
}

/// One lab's use of the mount points (a Drop guard).
pub struct MountPoints<'a> {
    set: &'a MountPointSet,
}

impl MountPointSet {
    pub fn new(points: &[&str], lock: &str, record: &str) -> MountPointSet {
        MountPointSet {
            points: points.iter().map(PathBuf::from).collect(),
            lock: lock.into(),
            record: record.into(),
            users: Mutex::new((0, None)),
        }
    }

    /// The mount points and their ancestors that are not there now (what a
    /// lab would create).
    pub fn absent(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = Vec::new();
        for mp in &self.points {
            for a in mp.ancestors().take_while(|a| !a.exists()) {
                if !v.iter().any(|p| p == a) {
                    v.push(a.to_path_buf());
                }
            }
        }
        v
    }

    pub fn points(&self) -> &[PathBuf] {
        &self.points
    }

    /// When no lab of any process is alive: the lock, held exclusive (no
    /// lab can start while it is held). None while one is (or the lock
    /// file cannot be opened).
    pub fn alone(&self) -> Option<File> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.lock)
            .ok()?;
        f.try_lock().ok()?;
        Some(f)
    }

    /// A lab's use: the missing mount points are created and written down.
    pub fn enter(&self) -> Result<MountPoints<'_>> {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        if users.0 == 0 {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&self.lock)
                .with_context(|| format!("open {}", self.lock.display()))?;
            // Alone: what a killed run left written down goes first.
            if f.try_lock().is_ok() {
                self.remove_recorded();
            }
            // Shared (converted from exclusive if taken); waits while another
            // process's last lab removes them.
            f.lock_shared()
                .with_context(|| format!("flock {}", self.lock.display()))?;
            users.1 = Some(f);
        }
        users.0 += 1;
        drop(users);
        // From here every way out, an error included, goes through Drop.
        let guard = MountPoints { set: self };
        for mp in &self.points {
            let mut missing: Vec<&Path> = mp.ancestors().take_while(|a| !a.exists()).collect();
            missing.reverse();
            for d in missing {
                match std::fs::create_dir(d) {
                    Ok(()) => {}
                    // Another run's lab made it: not ours to remove.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e).with_context(|| format!("mkdir {}", d.display())),
                }
                let ino = std::fs::symlink_metadata(d)?.ino();
                let mut list = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.record)
                    .with_context(|| format!("open {}", self.record.display()))?;
                std::io::Write::write_all(
                    &mut list,
                    format!("{ino} {}\n", d.display()).as_bytes(),
                )?;
            }
        }
        Ok(guard)
    }

    fn leave(&self) {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        users.0 = users.0.saturating_sub(1);
        if users.0 > 0 {
            return;
        }
        let Some(f) = users.1.take() else { return };
        // Exclusive only when no other process holds it shared.
        if f.try_lock().is_ok() {
            self.remove_recorded();
        }
    }

    /// The directories written down that are still the ones the labs
    /// created (same inode), in the order they were made.
    pub fn made(&self) -> Vec<PathBuf> {
        let record = std::fs::read_to_string(&self.record).unwrap_or_default();
        record
            .lines()
            .filter_map(|line| {
                let (ino, d) = line.split_once(' ')?;
                let ino = ino.parse::<u64>().ok()?;
                let m = std::fs::symlink_metadata(d).ok()?;
                (m.is_dir() && m.ino() == ino).then(|| PathBuf::from(d))
            })
            .collect()
    }

    /// Removes, newest first, each directory the labs made ([`Self::made`])
    /// if empty; then the record.
    fn remove_recorded(&self) {
        for d in self.made().iter().rev() {
            if let Err(e) = std::fs::remove_dir(d) {
                crate::say(&format!("e2e: left {} on the host: {e}", d.display()));
            }
        }
        let _ = std::fs::remove_file(&self.record);
    }
}

impl Drop for MountPoints<'_> {
    fn drop(&mut self) {
        self.set.leave();
    }
}

#[test]
fn mount_points_removes_what_it_created_and_only_that() {
    let tmp = tempfile::tempdir().unwrap();
    let t = |rel: &str| tmp.path().join(rel);
    // There before: an empty parent and an empty mount point.
    std::fs::create_dir(t("etc")).unwrap();
    std::fs::create_dir(t("existing")).unwrap();
    let points = [
        t("etc/kubernetes"),
        t("var/lib/nvke"),
        t("var/lib/etcd"),
        t("existing"),
    ];
    let points_s: Vec<&str> = points.iter().map(|p| p.to_str().unwrap()).collect();
    let set = MountPointSet::new(
        &points_s,
        t("lock").to_str().unwrap(),
        t("created").to_str().unwrap(),
    );
    let created = [
        "etc/kubernetes",
        "var",
        "var/lib",
        "var/lib/nvke",
        "var/lib/etcd",
    ];
    let there = |rels: &[&str]| rels.iter().all(|r| t(r).is_dir());
    let gone = |rels: &[&str]| rels.iter().all(|r| !t(r).exists());
    let mut absent = set.absent();
    absent.sort();
    let mut want: Vec<PathBuf> = created.iter().map(|r| t(r)).collect();
    want.sort();
    assert_eq!(absent, want);
    assert!(set.alone().is_some());

    // Two labs of this process: the mount points stay until the last goes.
    let a = set.enter().unwrap();
    assert!(there(&created) && there(&["etc", "existing"]));
    let mut made = set.made();
    made.sort();
    assert_eq!(made, want, "what the labs made, written down");
    assert!(set.alone().is_none());
    let b = set.enter().unwrap();
    drop(a);
    assert!(there(&created));
    // Another run's lab alive (a shared flock of its own): nothing removed
    // when this process's last lab goes.
    let other = File::open(t("lock")).unwrap();
    other.lock_shared().unwrap();
    drop(b);
    assert!(there(&created), "removed while another run uses them");
    // That run gone, the record is still there: the next lab that finds
    // itself alone clears it first, and its own way out removes what the
    // labs made and leaves what existed before.
    drop(other);
    let c = set.enter().unwrap();
    assert!(there(&created));
    drop(c);
    assert!(gone(&created), "left behind: {:?}", set.absent());
    assert!(there(&["etc", "existing"]), "removed what existed before");
    assert!(!t("created").exists());

    // A test that panics with a lab alive: removed while unwinding.
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _lab = set.enter().unwrap();
        assert!(there(&created));
        panic!("a failed assertion in an e2e case");
    }));
    assert!(unwound.is_err());
    assert!(gone(&created), "left behind after a panic");
    assert!(there(&["etc", "existing"]));

    // Not removed: one someone filled, and one replaced by another
    // directory at the same path (not the one the lab made).
    let d = set.enter().unwrap();
    std::fs::write(t("var/lib/nvke/keep"), b"x").unwrap();
    // (moved aside, not removed: its inode cannot be reused meanwhile)
    std::fs::rename(t("etc/kubernetes"), t("moved")).unwrap();
    std::fs::create_dir(t("etc/kubernetes")).unwrap();
    drop(d);
    assert!(t("var/lib/nvke/keep").is_file());
    assert!(
        t("etc/kubernetes").is_dir(),
        "removed a directory the lab did not make"
    );
    assert!(gone(&["var/lib/etcd"]));
}
