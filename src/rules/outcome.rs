//! Outcomes, phases (the closed list of SPEC section 3), manifest locations,
//! and the exit codes of SPEC section 7. Pure.

use crate::rules::component::Component;
use crate::rules::opid::excerpt;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

// Receipt `outcome`. The doc comment is the contract's description.
/// How an operation ended. `renewed` and `unchanged` are successes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

// Receipt `manifests`. The doc comment is the contract's description.
/// Where one of the four manifests is: `active` (manifests directory only),
/// `staged` (staging only), `both`, or `missing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// A string that is none of a closed list's names (the excerpt is short and
/// escaped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownName {
    #[error("unknown outcome {0}")]
    Outcome(String),
    #[error("unknown manifest location {0}")]
    Location(String),
    #[error("unknown component in phase {0}")]
    PhaseComponent(String),
    #[error("unknown phase {0}")]
    Phase(String),
}

impl Outcome {
    /// All seven, successes first.
    pub const ALL: [Outcome; 7] = [
        Outcome::Renewed,
        Outcome::Unchanged,
        Outcome::Failed,
        Outcome::FailedNotRestored,
        Outcome::Cancelled,
        Outcome::Abandoned,
        Outcome::Superseded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Renewed => "renewed",
            Outcome::Unchanged => "unchanged",
            Outcome::Failed => "failed",
            Outcome::FailedNotRestored => "failed_not_restored",
            Outcome::Cancelled => "cancelled",
            Outcome::Abandoned => "abandoned",
            Outcome::Superseded => "superseded",
        }
    }
    pub fn is_success(self) -> bool {
        matches!(self, Outcome::Renewed | Outcome::Unchanged)
    }
}

impl FromStr for Outcome {
    type Err = UnknownName;
    /// The exact receipt string; anything else is an error.
    fn from_str(s: &str) -> Result<Outcome, UnknownName> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| UnknownName::Outcome(excerpt(s)))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ManifestLocation {
    pub const ALL: [ManifestLocation; 4] = [
        ManifestLocation::Active,
        ManifestLocation::Staged,
        ManifestLocation::Both,
        ManifestLocation::Missing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ManifestLocation::Active => "active",
            ManifestLocation::Staged => "staged",
            ManifestLocation::Both => "both",
            ManifestLocation::Missing => "missing",
        }
    }
}

impl fmt::Display for ManifestLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ManifestLocation {
    type Err = UnknownName;
    /// The exact receipt string; anything else is an error.
    fn from_str(s: &str) -> Result<ManifestLocation, UnknownName> {
        ManifestLocation::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownName::Location(excerpt(s)))
    }
}

/// The prefix of `restart:<component>`.
const RESTART_PREFIX: &str = "restart:";

impl Phase {
    /// Every phase without a component, in SPEC order (`Restart` comes
    /// between `RenewCerts` and `Postflight`).
    const SIMPLE: [Phase; 15] = [
        Phase::Arguments,
        Phase::Lock,
        Phase::Receipt,
        Phase::PhaseFile,
        Phase::Topology,
        Phase::StagingConflict,
        Phase::CaCheck,
        Phase::Expiry,
        Phase::Health,
        Phase::TwoControlPlaneVoters,
        Phase::Backup,
        Phase::RenewCerts,
        Phase::Postflight,
        Phase::Cancelled,
        Phase::Done,
    ];

    /// All nineteen phases: the simple ones and `restart:<component>` for
    /// each of the four.
    pub fn all() -> Vec<Phase> {
        let mut v: Vec<Phase> = Phase::SIMPLE[..12].to_vec();
        v.extend(Component::ALL.into_iter().map(Phase::Restart));
        v.extend_from_slice(&Phase::SIMPLE[12..]);
        v
    }

    /// The fixed name of a phase without a component.
    fn simple_str(self) -> Option<&'static str> {
        Some(match self {
            Phase::Arguments => "arguments",
            Phase::Lock => "lock",
            Phase::Receipt => "receipt",
            Phase::PhaseFile => "phase-file",
            Phase::Topology => "topology",
            Phase::StagingConflict => "staging-conflict",
            Phase::CaCheck => "ca-check",
            Phase::Expiry => "expiry",
            Phase::Health => "health",
            Phase::TwoControlPlaneVoters => "two-control-plane-voters",
            Phase::Backup => "backup",
            Phase::RenewCerts => "renew-certs",
            Phase::Restart(_) => return None,
            Phase::Postflight => "postflight",
            Phase::Cancelled => "cancelled",
            Phase::Done => "done",
        })
    }

    /// `restart:etcd`, `two-control-plane-voters`, ...
    pub fn as_string(self) -> String {
        match self {
            Phase::Restart(c) => format!("{RESTART_PREFIX}{}", c.name()),
            p => p.simple_str().unwrap_or_default().to_string(),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_string())
    }
}

impl FromStr for Phase {
    type Err = UnknownName;
    /// Exactly one of the closed list; anything else is an error.
    fn from_str(s: &str) -> Result<Phase, UnknownName> {
        if let Some(rest) = s.strip_prefix(RESTART_PREFIX) {
            return Component::from_name(rest)
                .map(Phase::Restart)
                .ok_or_else(|| UnknownName::PhaseComponent(excerpt(s)));
        }
        Phase::SIMPLE
            .into_iter()
            .find(|p| p.simple_str() == Some(s))
            .ok_or_else(|| UnknownName::Phase(excerpt(s)))
    }
}

impl Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_string())
    }
}

/// The contract's schema: the flat list of the nineteen strings.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Phase {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Phase".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<String> = Phase::all().into_iter().map(Phase::as_string).collect();
        schemars::json_schema!({
            "description": "The closed list of phases (SPEC section 3).",
            "type": "string",
            "enum": names
        })
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
pub fn exit_code_for(outcome: Outcome, all_active: bool) -> u8 {
    match outcome {
        Outcome::Renewed | Outcome::Unchanged => exit::OK,
        Outcome::Abandoned | Outcome::Superseded => exit::FENCED,
        Outcome::FailedNotRestored => exit::OPERATOR_MUST_ACT,
        Outcome::Failed | Outcome::Cancelled => {
            if all_active {
                exit::FAILED
            } else {
                exit::OPERATOR_MUST_ACT
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_strings_round_trip() {
        let names: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(
            names,
            [
                "renewed",
                "unchanged",
                "failed",
                "failed_not_restored",
                "cancelled",
                "abandoned",
                "superseded"
            ]
        );
        for o in Outcome::ALL {
            assert_eq!(o.as_str().parse::<Outcome>().unwrap(), o);
            assert_eq!(o.to_string(), o.as_str());
            // serde agrees with as_str.
            let j = serde_json::to_string(&o).unwrap();
            assert_eq!(j, format!("\"{}\"", o.as_str()));
            assert_eq!(serde_json::from_str::<Outcome>(&j).unwrap(), o);
        }
        for bad in [
            "",
            "Renewed",
            "renewed ",
            "failed-not-restored",
            "ok",
            "success",
        ] {
            assert!(bad.parse::<Outcome>().is_err(), "{bad}");
        }
    }

    #[test]
    fn only_renewed_and_unchanged_succeed() {
        for o in Outcome::ALL {
            assert_eq!(
                o.is_success(),
                matches!(o, Outcome::Renewed | Outcome::Unchanged),
                "{o}"
            );
        }
    }

    #[test]
    fn manifest_locations_round_trip() {
        let names: Vec<_> = ManifestLocation::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(names, ["active", "staged", "both", "missing"]);
        for m in ManifestLocation::ALL {
            assert_eq!(m.as_str().parse::<ManifestLocation>().unwrap(), m);
            let j = serde_json::to_string(&m).unwrap();
            assert_eq!(j, format!("\"{}\"", m.as_str()));
            assert_eq!(serde_json::from_str::<ManifestLocation>(&j).unwrap(), m);
        }
        assert!("Active".parse::<ManifestLocation>().is_err());
        assert!("".parse::<ManifestLocation>().is_err());
    }

    #[test]
    fn phase_strings_are_the_closed_list() {
        let names: Vec<_> = Phase::all().into_iter().map(|p| p.as_string()).collect();
        assert_eq!(
            names,
            [
                "arguments",
                "lock",
                "receipt",
                "phase-file",
                "topology",
                "staging-conflict",
                "ca-check",
                "expiry",
                "health",
                "two-control-plane-voters",
                "backup",
                "renew-certs",
                "restart:etcd",
                "restart:kube-apiserver",
                "restart:kube-controller-manager",
                "restart:kube-scheduler",
                "postflight",
                "cancelled",
                "done"
            ]
        );
        for p in Phase::all() {
            assert_eq!(p.as_string().parse::<Phase>().unwrap(), p);
            assert_eq!(p.to_string(), p.as_string());
            let j = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Phase>(&j).unwrap(), p);
        }
    }

    #[test]
    fn phase_rejects_anything_else() {
        for bad in [
            "",
            "restart",
            "restart:",
            "restart:etcd ",
            "restart:Etcd",
            "restart:kube-vip",
            "restart:etcd:x",
            "Restart:etcd",
            " lock",
            "lock\n",
            "phase_file",
            "two_control_plane_voters",
            "renew",
            "admission",
        ] {
            let e = bad.parse::<Phase>().unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e:?}");
        }
        assert!(serde_json::from_str::<Phase>("\"nope\"").is_err());
        assert!(serde_json::from_str::<Phase>("3").is_err());
    }

    #[test]
    fn exit_codes() {
        for all_active in [true, false] {
            assert_eq!(exit_code_for(Outcome::Renewed, all_active), 0);
            assert_eq!(exit_code_for(Outcome::Unchanged, all_active), 0);
            assert_eq!(exit_code_for(Outcome::Abandoned, all_active), 5);
            assert_eq!(exit_code_for(Outcome::Superseded, all_active), 5);
            assert_eq!(exit_code_for(Outcome::FailedNotRestored, all_active), 4);
        }
        assert_eq!(exit_code_for(Outcome::Failed, true), 1);
        assert_eq!(exit_code_for(Outcome::Failed, false), 4);
        assert_eq!(exit_code_for(Outcome::Cancelled, true), 1);
        assert_eq!(exit_code_for(Outcome::Cancelled, false), 4);
    }
}
