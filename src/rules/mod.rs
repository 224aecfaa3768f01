//! Pure rules on values: parse from bytes, decide, render. No I/O.

/// The node agent state file: parse, and what its intent is.
pub mod agent;
/// The API's unavailability during a restart (v1.2).
pub mod availability;
/// RFC 3339 UTC timestamps and day arithmetic.
pub(crate) mod clock;
/// The four static pods, in restart order.
pub mod component;
/// What crictl and etcdctl print, and the etcd quorum judgement.
pub mod cri;
/// The node as it declares itself: per component, its probe, addresses
/// and serving files, read from its static pod manifest (SPEC 12, v1.3).
pub mod declared;
/// Expiry severity: ok, due, expired (v1.2).
pub mod expiry;
pub(crate) mod failure;
/// The fencing check's decision: confirm, abandon or refuse (SPEC 6).
pub mod fence;
/// The JSON state files' types: receipt, phase file, lock owner, the
/// agent's state (re-exported by `crate::contract`).
pub mod files;
/// Pflag-style flag lists in static pod manifests.
pub(crate) mod flags;
/// Each leaf proven renewed: kept what it was, changed its serial (SPEC 4
/// step 8, "Leaf by leaf", v1.3).
pub mod leaf_proof;
/// The live node's judgement (SPEC 10, v1.2).
pub mod live;
/// Operation IDs (SPEC 1) and bounded excerpts.
pub mod opid;
/// Outcomes, phases, manifest locations, exit codes (SPEC 3, 7).
pub mod outcome;
/// The phase file, V2 and legacy five-line (SPEC 3).
pub mod phase;
/// Certificates and kubeconfigs: parse, chain, key match.
pub mod pki;
/// `/proc/locks`: the real holder of a flock, by device and inode.
pub mod proclocks;
/// A renewal at work: its progress apart from the problems (SPEC 6).
pub mod progress;
/// Receipts (SPEC 3): parse, render, bounded messages.
pub mod receipt;
/// Credentials out of the evidence bundle, by structure (SPEC 6, v1.3).
pub mod redact;
/// The resume rule (SPEC 4 step 3), one for renew, check and status.
pub(crate) mod resume;
/// The strict reader of the JSON state files: serde, today's messages.
pub mod strict;
/// A bounded unified line diff and the nearest names to a mistyped one.
pub(crate) mod textdiff;
/// The documents' building blocks: checked strings, closed vocabularies,
/// shared objects (re-exported by `crate::contract`).
pub mod values;
/// `--check`'s judgement: its facts in, its verdict out (SPEC 5).
pub mod verdict;
/// YAML within bounds: aliases, anchors, nodes, depth, documents, size
/// (SPEC 10, "Bounded reads").
pub mod yaml;
