//! Outcomes, phases (the closed list of SPEC section 3), manifest locations,
//! and the exit codes of SPEC section 7. Pure.

use crate::component::Component;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How an operation ended (receipt `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Renewed,
    Unchanged,
    Failed,
    FailedNotRestored,
    Cancelled,
    Abandoned,
    Superseded,
}

/// Where one of the four manifests was (receipt `manifests`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestLocation {
    Active,
    Staged,
    Both,
    Missing,
}

/// The closed list of phases used in output and receipts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    Arguments,
    Lock,
    Receipt,
    PhaseFile,
    Topology,
    StagingConflict,
    CaCheck,
    Expiry,
    Health,
    TwoControlPlaneVoters,
    Backup,
    RenewCerts,
    Restart(Component),
    Postflight,
    Cancelled,
    Done,
}

/// Process exit codes (SPEC section 7).
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const LOCK_TIMEOUT: u8 = 3;
    pub const OPERATOR_MUST_ACT: u8 = 4;
    pub const FENCED: u8 = 5;
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        todo!()
    }
    pub fn is_success(self) -> bool {
        todo!()
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ManifestLocation {
    pub fn as_str(self) -> &'static str {
        todo!()
    }
}

impl Phase {
    /// `restart:etcd`, `two-control-plane-voters`, ...
    pub fn as_string(self) -> String {
        todo!()
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_string())
    }
}

impl FromStr for Phase {
    type Err = String;
    fn from_str(_s: &str) -> Result<Phase, String> {
        todo!()
    }
}

impl Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_string())
    }
}

impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Phase, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The exit code a run with this outcome has, given where the four manifests
/// ended (`all_active` false: some manifest is staged, both or missing).
/// Success 0; abandoned/superseded 5; failed_not_restored 4; any other outcome
/// 4 when a manifest is not active, else 1.
pub fn exit_code_for(_outcome: Outcome, _all_active: bool) -> u8 {
    todo!()
}
