//! Text the views share: the node's files at a glance.

use crate::contract::text::table;
use crate::node::manifests::ManifestsReport;
use crate::node::snapshot::NodeSnapshot;
use crate::rules::component::Component;
use crate::rules::live::Judged;
use crate::tools::live::Observation;

fn manifest_cell(m: &ManifestsReport, c: Component) -> String {
    let Some(v) = m.manifests.get(&c) else {
        return "?".into();
    };
    if let Some(e) = &v.error {
        return format!("REFUSED ({e})");
    }
    let mut parts = Vec::new();
    if v.active {
        parts.push("active");
    }
    if v.runbook_staged {
        parts.push("staged (runbook)");
    }
    if v.agent_staged {
        parts.push("staged (agent)");
    }
    if parts.is_empty() {
        "MISSING".into()
    } else if parts.len() > 1 {
        format!("CONFLICT: {}", parts.join(" + "))
    } else if !v.active {
        parts[0].to_uppercase()
    } else {
        parts[0].to_string()
    }
}

/// The node's files at a glance, then what its components were seen
/// doing: the middle of check's text and of the operator view's.
pub fn text_node(out: &mut String, s: &NodeSnapshot, o: &Observation, j: &Judged, wide: bool) {
    text_node_summary(
        out,
        &s.lock.describe(),
        &s.phase.describe(),
        &s.agent.summary(),
        &s.manifests,
        wide,
    );
    out.push('\n');
    crate::judge::live::text(out, o, j);
    out.push('\n');
}

/// Lock, phase, agent state and manifests at a glance.
/// Compact unless `wide` (SPEC 6, v1.3: a clean node in one screen): the
/// four manifests in one row when all are active, the two staging
/// directories in one when both are empty or absent.
fn text_node_summary(
    out: &mut String,
    lock: &str,
    phase: &str,
    agent: &str,
    m: &ManifestsReport,
    wide: bool,
) {
    let mut rows = vec![
        vec!["LOCK".to_string(), lock.to_string()],
        vec!["PHASE FILE".to_string(), phase.to_string()],
    ];
    if !agent.is_empty() {
        rows.push(vec!["NODE AGENT".to_string(), agent.to_string()]);
    }
    let all_active = m.manifests_dir_error.is_none()
        && Component::ALL
            .iter()
            .all(|c| manifest_cell(m, *c) == "active");
    if all_active && !wide {
        rows.push(vec![
            "MANIFESTS".to_string(),
            "all four active in /etc/kubernetes/manifests".to_string(),
        ]);
    } else {
        for c in Component::ALL {
            rows.push(vec![c.manifest_file(), manifest_cell(m, c)]);
        }
    }
    let idle = |v: &crate::contract::StagingView| v.error.is_none() && v.entries.is_empty();
    if !wide && idle(&m.runbook_staging) && idle(&m.agent_staging) {
        rows.push(vec![
            "STAGING".to_string(),
            "nothing staged (neither staging directory holds a file)".to_string(),
        ]);
    }
    for (v, who) in [
        (&m.runbook_staging, "STAGING"),
        (&m.agent_staging, "AGENT STAGING"),
    ] {
        if !wide && idle(&m.runbook_staging) && idle(&m.agent_staging) {
            break;
        }
        let cell = if let Some(e) = &v.error {
            format!("REFUSED ({e})")
        } else if !v.exists {
            format!("{} (absent)", v.path)
        } else if v.entries.is_empty() {
            format!("{} (empty)", v.path)
        } else {
            format!("{}: {}", v.path, v.entries.join(", "))
        };
        rows.push(vec![who.to_string(), cell]);
    }
    if let Some(e) = &m.manifests_dir_error {
        rows.push(vec!["MANIFESTS DIR".to_string(), format!("REFUSED ({e})")]);
    }
    // Why each is a stray is among the warnings.
    for s in &m.strays {
        rows.push(vec!["STRAY".to_string(), s.path.clone()]);
    }
    table(out, &rows);
}
