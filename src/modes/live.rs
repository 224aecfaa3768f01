//! The live node, looked at once for the views (SPEC 10, v1.2) with the
//! node's tools ([`crate::tools::live`]); how it is shown is in
//! [`crate::judge::live`].

use crate::contract::cli::Global;
use crate::node::fsx::Root;
use crate::tools::live::Observation;

/// Look at the node once, within `--probe-timeout`, with the node's tools.
pub fn observe(root: &Root, g: &Global) -> Observation {
    let cancel = crate::tools::signals::Cancel::new();
    let rt = crate::tools::runtime::NodeRuntime::new(
        &crate::tools::runtime::ToolOptions::of(g),
        root,
        cancel,
    );
    crate::tools::live::observe(&rt, root, g.clock.now(), g.probe_timeout)
}
