//! Records the git commit for `--version` (NVKE_GIT_COMMIT overrides, for
//! builds outside a checkout).
use std::process::Command;

#[allow(clippy::disallowed_methods)] // the build script runs git; no node, no tool path rules
fn main() {
    println!("cargo:rerun-if-env-changed=NVKE_GIT_COMMIT");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    let commit = std::env::var("NVKE_GIT_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            Command::new("git")
                .args(["rev-parse", "HEAD"])
                .env_remove("GIT_DIR")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        });
    println!(
        "cargo:rustc-env=NVKE_GIT_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );
}
