//! Hex and sha256 digests, as the runbook prints them (lowercase hex): the
//! CA fingerprints of phase files and receipts, `--expect-ca-sha256`, the
//! tree snapshots' file contents, the e2e controller's content-addressed
//! binary.

use sha2::Digest;
use std::path::Path;

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of `bytes`, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

/// sha256 (hex) of the file at `p`; panics naming the file if it cannot be
/// read.
pub fn sha256_file(p: &Path) -> String {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    sha256_hex(&bytes)
}
