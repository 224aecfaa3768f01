//! Judgements of one observation, pure: what `node/` read of the node's
//! files and `tools/` saw of its running components, judged and rendered
//! without any I/O, so every mode states it the same way and the unit tests
//! need no root. The decisions that need only values live a floor lower, in
//! `rules/`; these are the ones that read the node's reports
//! (`node::snapshot::NodeSnapshot`, `tools::live::Observation`).

/// What to know and do next: severity, warnings, next steps.
pub(crate) mod advice;
/// The fencing check's answer, as printed (SPEC 6).
pub(crate) mod fence;
/// The live node in the views (SPEC 10): the `LIVE` block, the `live` field.
pub(crate) mod live;
/// A renewal's result, replay and early failure, and its steps' judgements.
pub(crate) mod renew;
/// The operator view of --status-only, judged and rendered (SPEC 6).
pub(crate) mod status;
/// Text the views share: the node's files at a glance.
pub(crate) mod text;
