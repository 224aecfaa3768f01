//! The live node in the views (SPEC 10, v1.2): observed once by
//! [`crate::tools::live`], judged by [`crate::rules::live`]; here it is
//! only shown: the `LIVE` block of the text and the `live` field of the
//! JSON documents.

use crate::contract as doc;
use crate::rules::live::{Containers, Finding, Health, Judged, Served, Weight};
use crate::tools::live::Observation;

fn ts(t: time::OffsetDateTime) -> doc::Timestamp {
    doc::Timestamp(crate::rules::clock::rfc3339(t))
}

fn weight(w: Weight) -> doc::LiveWeight {
    match w {
        Weight::ActionNeeded => doc::LiveWeight::ActionNeeded,
        Weight::NotClean => doc::LiveWeight::NotClean,
    }
}

/// A pod in one line: the worst finding (and how many more), or how it runs.
fn summary(o: &crate::rules::live::Observed, f: &[Finding], wall: time::OffsetDateTime) -> String {
    if let Some(first) = f.first() {
        let more = match f.len() - 1 {
            0 => String::new(),
            n => format!(" (+{n} more)"),
        };
        return format!("{}{more}", first.words(wall));
    }
    match &o.containers {
        Ok(Containers::Running {
            since, restarts, ..
        }) => {
            let up = since
                .map(|s| format!("up {}", crate::rules::live::span(wall - s)))
                .unwrap_or_else(|| "running".to_string());
            let health = match &o.health {
                Some(Ok(Health::Healthy)) => ", healthy",
                _ => "",
            };
            let r = match restarts {
                0 => String::new(),
                1 => ", 1 restart".to_string(),
                n => format!(", {n} restarts"),
            };
            format!("{up}{health}{r}")
        }
        Err(_) => "not checked (containers)".to_string(),
        // Not running is always a finding; nothing else is left.
        Ok(_) => "not running".to_string(),
    }
}

/// The `live` field of check and status.
pub fn view(o: &Observation, j: &Judged) -> doc::LiveView {
    let wall = o.wall;
    doc::LiveView {
        observed_at: ts(wall),
        budget_ms: o.budget.as_millis() as u64,
        runtime: j.runtime.as_ref().map(|why| format!("not checked: {why}")),
        took_ms: o.took.as_millis() as u64,
        pods: j
            .pods
            .iter()
            .map(|(p, f)| doc::LivePodView {
                name: p.name.clone(),
                state: match (f.first(), &p.containers, &p.health) {
                    (Some(x), _, _) => x.kind(),
                    (None, Err(_), _) => "not_checked",
                    // No health endpoint asked (kube-vip): it runs, no more.
                    (None, Ok(_), None) => "running",
                    (None, Ok(_), Some(_)) => "healthy",
                }
                .to_string(),
                summary: summary(p, f, wall),
                container: match &p.containers {
                    Ok(Containers::Running {
                        id,
                        since,
                        restarts,
                        ..
                    }) => Some(doc::LiveContainerView {
                        id: id.clone(),
                        running: true,
                        since: since.map(ts),
                        exit_code: None,
                        finished_at: None,
                        restarts: *restarts,
                    }),
                    Ok(Containers::Exited { id, exit, restarts }) => Some(doc::LiveContainerView {
                        id: id.clone(),
                        running: false,
                        since: None,
                        exit_code: exit.code,
                        finished_at: exit.finished.map(ts),
                        restarts: *restarts,
                    }),
                    _ => None,
                },
                health: p.health.as_ref().map(|h| {
                    // A failed probe as the kubelet counts it: as judged
                    // (`starting` within the start allowance, SPEC 12).
                    let counted = f
                        .iter()
                        .find(|x| matches!(x, Finding::Starting { .. } | Finding::Unhealthy(_)));
                    match (h, counted) {
                        (Ok(Health::Healthy), _) => "healthy".to_string(),
                        (_, Some(x)) => x.words(wall),
                        (Ok(Health::Unhealthy(a)), None) => format!("unhealthy: {a}"),
                        (Err(why), None) => format!("not checked: {why}"),
                    }
                }),
                served: p
                    .ports
                    .iter()
                    .map(|port| doc::LiveServedView {
                        port: port.port,
                        file: port.file.clone(),
                        served: port.served.as_ref().ok().map(|s| {
                            match s {
                                Served::Current => "current",
                                Served::Other => "other",
                                Served::Expired(_) => "expired",
                            }
                            .to_string()
                        }),
                        not_checked: port.served.as_ref().err().map(ToString::to_string),
                    })
                    .collect(),
                findings: f
                    .iter()
                    .map(|x| doc::LiveFindingView {
                        kind: x.kind().to_string(),
                        weight: weight(x.weight()),
                        blocks_gate: x.blocks_gate(),
                        message: x.words(wall),
                    })
                    .collect(),
                logs: o
                    .crictl
                    .as_deref()
                    .zip(crate::rules::live::log_container(p, f))
                    .map(|(w, id)| crate::judge::advice::logs_command(w, id)),
            })
            .collect(),
    }
}

/// The `LIVE` block: one line per pod.
pub fn text(out: &mut String, o: &Observation, j: &Judged) {
    let mut rows: Vec<Vec<String>> = j
        .pods
        .iter()
        .enumerate()
        .map(|(i, (p, f))| {
            vec![
                if i == 0 { "LIVE" } else { "" }.to_string(),
                p.name.clone(),
                summary(p, f, o.wall),
            ]
        })
        .collect();
    if let Some(why) = &j.runtime {
        rows.insert(
            0,
            vec![
                "LIVE".into(),
                "containers".into(),
                format!("not checked: {why}"),
            ],
        );
        rows[1][0].clear();
    }
    crate::contract::text::table(out, &rows);
}

/// Check's warnings (SPEC 5, 10): what the gate would wait on says so;
/// the rest as the view says it. Check's decision does not change.
pub fn check_warnings(j: &Judged, wall: time::OffsetDateTime) -> Vec<String> {
    let mut v: Vec<String> = j
        .gate_refusals(wall)
        .into_iter()
        .map(|r| format!("{r}: a renewal would fail its health gate"))
        .collect();
    for (o, f) in &j.pods {
        if crate::rules::component::Component::from_name(&o.name).is_none() {
            continue;
        }
        v.extend(
            f.iter()
                .filter(|x| !x.blocks_gate())
                .map(|x| format!("{} {}", o.name, x.words(wall))),
        );
    }
    v.extend(j.other_pods(wall));
    v.extend(j.unmanaged_serving());
    v
}
