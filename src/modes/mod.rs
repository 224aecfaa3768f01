//! The modes: thin drivers over the layers below.

/// The entry point: parse, dispatch, exit code.
pub mod app;
/// --check: facts, decide, verdict.
pub(crate) mod check;
/// --status-only --fence: the controller's fencing check (SPEC 6).
pub(crate) mod fence;
/// The live node in the views (SPEC 10).
pub(crate) mod live;
/// Writing the result once, bounded (SPEC 8).
pub(crate) mod output;
/// The renewal (SPEC 4) and --legacy-v1.
pub(crate) mod runbook;
/// --status-only: the operator view (SPEC 6).
pub(crate) mod status;
