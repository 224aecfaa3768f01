//! Fixture trees for the tests: a copy of a node tree with kubeadm's modes.
//! Included with `#[path = "support/tree.rs"] mod tree;` (and by node.rs).
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    chmod(dst, 0o755);
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
            let name = to.file_name().unwrap().to_string_lossy().to_string();
            let mode = if name.ends_with(".key") || name.ends_with(".conf") {
                0o600
            } else {
                0o644
            };
            chmod(&to, mode);
        }
    }
}
