//! The evidence report of a run, as the guide's "Validation evidence" asks:
//! source revision (the runbook's `--version`), the cycle and node operation
//! IDs, certificate expiry before and after (the runbook's `--check`, the
//! equivalent of `kubeadm certs check-expiration`), CA fingerprints, static
//! pod container IDs (`crictl ps -o json`), etcd health from inside each etcd
//! container, `/readyz?verbose` of every node, and the API probe and etcd
//! write results of the continuous traffic. One JSON file plus a Markdown
//! summary beside it, under `$NVKE_E2E_EVIDENCE_DIR` (default
//! `<target>/tmp/nvke-e2e-evidence/`).

use crate::controller::{Controller, CycleReport};
use crate::traffic::{self, TrafficLog};
use serde_json::{json, Value};
use std::path::PathBuf;

pub fn dir() -> PathBuf {
    std::env::var_os("NVKE_E2E_EVIDENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvke-e2e-evidence"))
}

/// What every node looks like now, collected by the controller over SSH
/// (JSON documents only) and from the lab namespace.
pub fn snapshot(ctl: &Controller) -> Value {
    let readyz = ctl.readyz_all(true);
    let nodes: Vec<(String, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = ctl
            .lab
            .nodes
            .iter()
            .map(|node| {
                let readyz = &readyz;
                s.spawn(move || {
                    // The check runs the pushed runbook (a no-op once there).
                    ctl.ensure_pushed(node);
                    let check = ctl.check(node, false).doc.unwrap_or(Value::Null);
                    let certs: Vec<Value> = check["certificates"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .iter()
                        .map(|c| json!({"name": c["name"], "notAfter": c["notAfter"], "daysLeft": c["daysLeft"]}))
                        .collect();
                    let cas: Vec<Value> = check["certificateAuthorities"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .iter()
                        .map(|c| json!({"name": c["name"], "notAfter": c["notAfter"], "sha256": c["sha256"]}))
                        .collect();
                    let ready = readyz
                        .iter()
                        .find(|(n, _)| n == node.name())
                        .map(|(_, r)| match r {
                            Ok((code, body)) => json!({"status": code, "body": body}),
                            Err(e) => json!({"error": e}),
                        })
                        .unwrap_or(Value::Null);
                    (
                        node.name().to_string(),
                        json!({
                            "ip": node.ip(),
                            "checkDecision": check["decision"],
                            "phaseFile": check["phaseFile"],
                            "lock": check["lock"],
                            "certificates": certs,
                            "certificateAuthorities": cas,
                            "caSHA256": check["caSHA256"],
                            "containers": ctl.containers(node).map(|c| json!(c)).unwrap_or_else(|e| json!({"error": e})),
                            "etcdEndpointHealth": ctl.etcd_health_on_node(node),
                            "readyzVerbose": ready,
                        }),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("snapshot thread"))
            .collect()
    });
    Value::Object(nodes.into_iter().collect())
}

/// Per-node API unavailability and etcd writes of one cycle: over each
/// node's renewal window and over the whole cycle.
pub fn traffic_report(ctl: &Controller, rep: &CycleReport, log: &TrafficLog) -> Value {
    let mut per_node = Vec::new();
    for run in &rep.nodes {
        let Some((from, to)) = run.window_ms else {
            continue;
        };
        let apis: Vec<Value> = ctl
            .lab
            .nodes
            .iter()
            .map(|n| json!(traffic::unavailability(log, n.name(), from, to)))
            .collect();
        per_node.push(json!({
            "renewedNode": run.node,
            "operationID": run.operation_id,
            "windowMs": [from, to],
            "apiUnavailability": apis,
            "etcdWrites": traffic::write_summary(log, from, to),
        }));
    }
    let whole: Vec<Value> = ctl
        .lab
        .nodes
        .iter()
        .map(|n| {
            json!(traffic::unavailability(
                log,
                n.name(),
                rep.started_ms,
                rep.finished_ms
            ))
        })
        .collect();
    json!({
        "probeEveryMs": traffic::PROBE_EVERY.as_millis() as u64,
        "writeEveryMs": traffic::WRITE_EVERY.as_millis() as u64,
        "writeDeadlineMs": traffic::WRITE_DEADLINE.as_millis() as u64,
        "probes": log.probes.len(),
        "readBack": match &log.read_back { Ok(k) => json!({"keys": k.len()}), Err(e) => json!({"error": e}) },
        "perRenewal": per_node,
        "wholeCycle": {
            "apiUnavailability": whole,
            "etcdWrites": traffic::write_summary(log, rep.started_ms, rep.finished_ms.max(rep.started_ms)),
        },
    })
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Writes `<case>-<unix seconds>.json` and `.md`; returns the JSON path.
pub fn write(case: &str, report: &Value) -> PathBuf {
    let d = dir();
    std::fs::create_dir_all(&d).expect("create the evidence dir");
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let path = d.join(format!("{case}-{stamp}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(report).unwrap()).expect("write evidence");
    std::fs::write(path.with_extension("md"), markdown(case, report)).expect("write evidence");
    path
}

fn markdown(case: &str, r: &Value) -> String {
    let mut s = format!("# nvke-cert-runbook e2e evidence: {case}\n\n");
    s.push_str(&format!(
        "- runbook: `{}` (sha256 `{}`)\n- started: {}\n- duration: {} s\n\n",
        r["runbookVersion"],
        r["runbookSha256"].as_str().unwrap_or(""),
        r["startedAt"].as_str().unwrap_or(""),
        r["durationSecs"]
    ));
    for c in r["cycles"].as_array().cloned().unwrap_or_default() {
        let cy = &c["cycle"];
        s.push_str(&format!(
            "## cycle `{}`: {} {}\n\n{}\n\n",
            cy["cycleId"].as_str().unwrap_or(""),
            cy["state"].as_str().unwrap_or(""),
            cy["phase"]
                .as_str()
                .map(|p| format!("(phase `{p}`)"))
                .unwrap_or_default(),
            md_escape(cy["message"].as_str().unwrap_or(""))
        ));
        s.push_str("| node | decision | operation ID | attempts | outcome | renewal ms | restarts (component: stop ms / healthy ms) |\n|---|---|---|---|---|---|---|\n");
        for n in cy["nodes"].as_array().cloned().unwrap_or_default() {
            let restarts = n["result"]["restarts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|x| {
                    format!(
                        "{}: {}/{}",
                        x["component"].as_str().unwrap_or(""),
                        x["stopMs"],
                        x["healthyMs"]
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let ms = n["windowMs"]
                .as_array()
                .map(|w| (w[1].as_u64().unwrap_or(0) - w[0].as_u64().unwrap_or(0)).to_string())
                .unwrap_or_default();
            s.push_str(&format!(
                "| {} | {} | `{}` | {} | {} | {ms} | {restarts} |\n",
                n["node"].as_str().unwrap_or(""),
                n["decision"].as_str().unwrap_or(""),
                n["operationID"].as_str().unwrap_or("-"),
                n["attempts"].as_array().map(|a| a.len()).unwrap_or(0),
                n["outcome"].as_str().unwrap_or(""),
            ));
        }
        s.push_str("\n| renewed node | API unavailable per node (ms, windows) | etcd writes committed/total (failed, retried, max latency ms) |\n|---|---|---|\n");
        for p in c["traffic"]["perRenewal"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let apis = p["apiUnavailability"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|u| {
                    format!(
                        "{}: {} ({})",
                        u["node"].as_str().unwrap_or(""),
                        u["unavailableMs"],
                        u["windows"].as_array().map(|w| w.len()).unwrap_or(0)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let w = &p["etcdWrites"];
            s.push_str(&format!(
                "| {} | {apis} | {}/{} ({}, {}, {}) |\n",
                p["renewedNode"].as_str().unwrap_or(""),
                w["committed"],
                w["writes"],
                w["failed"],
                w["retried"],
                w["maxLatencyMs"]
            ));
        }
        s.push('\n');
    }
    s.push_str("## certificates and CAs per node (before → after)\n\n| node | CA sha256 unchanged | leaf notAfter before | leaf notAfter after | control-plane container IDs changed |\n|---|---|---|---|---|\n");
    if let Some(before) = r["before"].as_object() {
        for (name, b) in before {
            let a = &r["after"][name];
            let min = |v: &Value| {
                v["certificates"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|c| c["notAfter"].as_str().map(str::to_string))
                    .min()
                    .unwrap_or_default()
            };
            let changed = b["containers"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(k, v)| a["containers"][k.as_str()] != **v)
                        .count()
                })
                .unwrap_or(0);
            s.push_str(&format!(
                "| {name} | {} | {} (earliest) | {} (earliest) | {changed} of 4 |\n",
                b["caSHA256"] == a["caSHA256"],
                min(b),
                min(a)
            ));
        }
    }
    if let Some(notes) = r["notes"].as_array() {
        s.push_str("\n## notes\n\n");
        for n in notes {
            s.push_str(&format!("- {}\n", n.as_str().unwrap_or("")));
        }
    }
    s
}
