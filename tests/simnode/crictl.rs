//! crictl, reading the kubelet stand-in's `containers.json`:
//! `ps`, `inspect`, `exec ... etcdctl`, `logs`, `version`.

use crate::regex::Regex;
use crate::sim::{self, Sim, SimConfig};
use crate::state::{self, Container};
use anyhow::{anyhow, bail, Result};
use serde_json::{json, Value};
use std::io::Write;

/// One flag a command knows: names (`-a`, `--all`) and whether it takes a
/// value.
struct FlagSpec {
    names: &'static [&'static str],
    value: bool,
}

const fn flag(names: &'static [&'static str], value: bool) -> FlagSpec {
    FlagSpec { names, value }
}

const GLOBAL: &[FlagSpec] = &[
    flag(&["-r", "--runtime-endpoint"], true),
    flag(&["-i", "--image-endpoint"], true),
    flag(&["-t", "--timeout"], true),
    flag(&["-c", "--config"], true),
    flag(&["-D", "--debug"], false),
    flag(&["--enable-tracing"], false),
    flag(&["--tracing-endpoint"], true),
    flag(&["--tracing-sampling-rate-per-million"], true),
];

const PS: &[FlagSpec] = &[
    flag(&["-a", "--all"], false),
    flag(&["-q", "--quiet"], false),
    flag(&["-o", "--output"], true),
    flag(&["--label"], true),
    flag(&["--name"], true),
    flag(&["-s", "--state"], true),
    flag(&["-p", "--pod"], true),
    flag(&["--id"], true),
    flag(&["--image"], true),
    flag(&["-l", "--latest"], false),
    flag(&["-n", "--last"], true),
    flag(&["-v", "--verbose"], false),
    flag(&["--no-trunc"], false),
    flag(&["--all-namespaces", "-A"], false),
    flag(&["--namespace"], true),
];

const INSPECT: &[FlagSpec] = &[
    flag(&["-o", "--output"], true),
    flag(&["-q", "--quiet"], false),
    flag(&["--template"], true),
];

const EXEC: &[FlagSpec] = &[
    flag(&["-s", "--sync"], false),
    flag(&["-i", "--interactive"], false),
    flag(&["-t", "--tty"], false),
    flag(&["--timeout"], true),
    flag(&["-e", "--env"], true),
    flag(&["-q", "--quiet"], false),
];

const LOGS: &[FlagSpec] = &[
    flag(&["--tail"], true),
    flag(&["-f", "--follow"], false),
    flag(&["-t", "--timestamps"], false),
    flag(&["-p", "--previous"], false),
    flag(&["--since"], true),
];

#[derive(Default, Debug)]
struct Parsed {
    /// canonical (first) flag name -> values (bool flags: "true").
    flags: Vec<(&'static str, String)>,
    positional: Vec<String>,
}

impl Parsed {
    fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| *n == name)
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
    fn all(&self, name: &str) -> Vec<&str> {
        self.flags
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Parses flags (`-o json`, `-o=json`, `--output json`, `--output=json`,
/// combined short booleans `-aq`). With `stop_at_positional`, everything from
/// the first positional argument on is positional (as for `exec`).
fn parse(args: &[String], spec: &[FlagSpec], stop_at_positional: bool) -> Result<Parsed> {
    let find = |name: &str| spec.iter().find(|f| f.names.contains(&name));
    let mut p = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            p.positional.extend(args[i..].iter().cloned());
            break;
        }
        if !a.starts_with('-') || a == "-" {
            p.positional.push(a.clone());
            if stop_at_positional {
                p.positional.extend(args[i..].iter().cloned());
                break;
            }
            continue;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        if let Some(f) = find(name) {
            let value = if f.value {
                match inline {
                    Some(v) => v,
                    None => {
                        let v = args
                            .get(i)
                            .cloned()
                            .ok_or_else(|| anyhow!("flag needs an argument: {name}"))?;
                        i += 1;
                        v
                    }
                }
            } else {
                inline.unwrap_or_else(|| "true".to_string())
            };
            p.flags.push((f.names[0], value));
            continue;
        }
        // -aq: combined short boolean flags.
        if !a.starts_with("--") && a.len() > 2 && inline.is_none() {
            let mut ok = true;
            let mut found = Vec::new();
            for c in a[1..].chars() {
                match find(&format!("-{c}")) {
                    Some(f) if !f.value => found.push(f.names[0]),
                    _ => ok = false,
                }
            }
            if ok {
                p.flags
                    .extend(found.into_iter().map(|n| (n, "true".to_string())));
                continue;
            }
        }
        bail!("flag provided but not defined: {name}");
    }
    Ok(p)
}

pub fn main(sim: Option<Sim>, args: &[String]) -> i32 {
    let Some(sim) = sim else {
        eprintln!("crictl (simnode): cannot find the simulation directory");
        return 1;
    };
    sim.append_log("crictl.log", &args.join(" "));
    match run(&sim, args) {
        Ok(code) => code,
        Err(e) => {
            // logrus' text format on a terminal, unescaped.
            eprintln!("FATA[0000] {e:#}");
            1
        }
    }
}

fn run(sim: &Sim, args: &[String]) -> Result<i32> {
    // Global flags come before the command.
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        let a = &args[i];
        let name = a.split_once('=').map(|(n, _)| n).unwrap_or(a);
        let Some(f) = GLOBAL.iter().find(|f| f.names.contains(&name)) else {
            bail!("flag provided but not defined: {name}");
        };
        i += 1;
        if f.value && !a.contains('=') {
            i += 1;
        }
    }
    let Some(cmd) = args.get(i) else {
        bail!("usage: crictl [global options] command [command options] (simnode: ps, inspect, exec, logs, version)");
    };
    let rest = &args[i + 1..];
    let cfg = sim.load_config()?;
    match cmd.as_str() {
        "ps" => ps(sim, rest),
        "inspect" => inspect(sim, rest),
        "exec" => exec(sim, &cfg, rest),
        "logs" => logs(sim, rest),
        "version" => {
            println!("Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  v1.7.22\nRuntimeApiVersion:  v1");
            Ok(0)
        }
        other => bail!("nvke-simnode crictl: unsupported command {other:?}"),
    }
}

fn containers(sim: &Sim) -> Result<Vec<Container>> {
    let mut v = state::load(sim)?.containers;
    // Newest first, like crictl.
    v.sort_by_key(|c| std::cmp::Reverse(c.created_nanos()));
    Ok(v)
}

/// Resolves a full ID or a unique prefix.
fn find<'a>(all: &'a [Container], id: &str) -> Result<&'a Container> {
    if id.is_empty() {
        bail!("ID cannot be empty");
    }
    let hits: Vec<&Container> = all.iter().filter(|c| c.id.starts_with(id)).collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => bail!(
            "getting the status of the container {id:?}: rpc error: code = NotFound desc = container \"{id}\" not found"
        ),
        _ => bail!("container ID prefix {id:?} is ambiguous"),
    }
}

fn image_ref(image: &str) -> String {
    use sha2::Digest;
    format!(
        "sha256:{}",
        sim::hex(&sha2::Sha256::digest(image.as_bytes()))
    )
}

fn ps_json(c: &Container) -> Value {
    json!({
        "id": c.id,
        "podSandboxId": c.pod_sandbox_id,
        "metadata": { "name": c.name, "attempt": c.attempt },
        "image": { "image": c.image, "annotations": {}, "userSpecifiedImage": "", "runtimeHandler": "" },
        "imageRef": image_ref(&c.image),
        "state": c.state,
        "createdAt": c.created_at,
        "labels": c.labels,
        "annotations": c.annotations,
    })
}

fn state_word(state: &str) -> &str {
    match state {
        state::RUNNING => "Running",
        state::EXITED => "Exited",
        "CONTAINER_CREATED" => "Created",
        _ => "Unknown",
    }
}

fn ago(nanos: i128) -> String {
    let secs = ((sim::now_nanos() - nanos) / 1_000_000_000).max(0);
    match secs {
        0 => "Less than a second ago".to_string(),
        1..=59 => format!("{secs} seconds ago"),
        60..=3599 => format!("{} minutes ago", secs / 60),
        _ => format!("{} hours ago", secs / 3600),
    }
}

fn ps(sim: &Sim, args: &[String]) -> Result<i32> {
    let p = parse(args, PS, false)?;
    if let Some(extra) = p.positional.first() {
        bail!("crictl ps takes no arguments (got {extra:?})");
    }
    let state_filter = match p.get("-s") {
        None if p.has("-a") => None,
        None => Some(state::RUNNING.to_string()),
        Some(s) => Some(match s.to_ascii_lowercase().as_str() {
            "running" => state::RUNNING.to_string(),
            "exited" => state::EXITED.to_string(),
            "created" => "CONTAINER_CREATED".to_string(),
            "unknown" => "CONTAINER_UNKNOWN".to_string(),
            other => {
                bail!("--state should be one of created, running, exited or unknown, not {other:?}")
            }
        }),
    };
    let mut labels = Vec::new();
    for l in p.all("--label") {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| anyhow!("incorrectly specified label: {l}"))?;
        labels.push((k.to_string(), v.to_string()));
    }
    let name_re = p.get("--name").map(Regex::new).transpose()?;
    let output = p.get("-o").unwrap_or("table");
    let mut list: Vec<Container> = containers(sim)?
        .into_iter()
        .filter(|c| state_filter.as_deref().is_none_or(|s| c.state == s))
        .filter(|c| labels.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
        .filter(|c| name_re.as_ref().is_none_or(|re| re.is_match(&c.name)))
        .filter(|c| {
            p.get("-p")
                .is_none_or(|pod| c.pod_sandbox_id.starts_with(pod))
        })
        .filter(|c| p.get("--id").is_none_or(|id| c.id.starts_with(id)))
        .filter(|c| p.get("--image").is_none_or(|img| c.image == img))
        .filter(|c| {
            p.get("--namespace")
                .is_none_or(|ns| c.namespace.contains(ns))
        })
        .collect();
    if p.has("-l") {
        list.truncate(1);
    } else if let Some(n) = p.get("-n") {
        let n: usize = n.parse().map_err(|_| anyhow!("invalid --last {n:?}"))?;
        if n > 0 {
            list.truncate(n);
        }
    }
    let mut out = String::new();
    match output {
        "json" => {
            let v = json!({ "containers": list.iter().map(ps_json).collect::<Vec<_>>() });
            out = serde_json::to_string_pretty(&v)? + "\n";
        }
        "yaml" => {
            let v = json!({ "containers": list.iter().map(ps_json).collect::<Vec<_>>() });
            out = serde_yaml::to_string(&v)?;
        }
        "table" => {
            let no_trunc = p.has("--no-trunc");
            let trunc = |s: &str| {
                if no_trunc {
                    s.to_string()
                } else {
                    s.chars().take(13).collect()
                }
            };
            if p.has("-q") {
                for c in &list {
                    out.push_str(&c.id);
                    out.push('\n');
                }
            } else {
                let mut rows = vec![[
                    "CONTAINER".to_string(),
                    "IMAGE".to_string(),
                    "CREATED".to_string(),
                    "STATE".to_string(),
                    "NAME".to_string(),
                    "ATTEMPT".to_string(),
                    "POD ID".to_string(),
                    "POD".to_string(),
                ]];
                for c in &list {
                    rows.push([
                        trunc(&c.id),
                        c.image.clone(),
                        ago(c.created_nanos()),
                        state_word(&c.state).to_string(),
                        c.name.clone(),
                        c.attempt.to_string(),
                        trunc(&c.pod_sandbox_id),
                        c.pod_full_name.clone(),
                    ]);
                }
                let widths: Vec<usize> = (0..8)
                    .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
                    .collect();
                for r in &rows {
                    let mut line = String::new();
                    for (i, cell) in r.iter().enumerate() {
                        if i < 7 {
                            line.push_str(&format!("{cell:<w$}   ", w = widths[i]));
                        } else {
                            line.push_str(cell);
                        }
                    }
                    out.push_str(line.trim_end());
                    out.push('\n');
                }
            }
        }
        other => bail!("unsupported output format {other:?}"),
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(0)
}

fn inspect_json(c: &Container) -> Value {
    let t = |s: &str| sim::rfc3339_nanos(s.parse().unwrap_or(0));
    json!({
        "status": {
            "id": c.id,
            "metadata": { "name": c.name, "attempt": c.attempt },
            "state": c.state,
            "createdAt": t(&c.created_at),
            "startedAt": t(&c.started_at),
            "finishedAt": t(&c.finished_at),
            "exitCode": c.exit_code,
            "image": { "image": c.image },
            "imageRef": image_ref(&c.image),
            "reason": if c.is_running() { "" } else if c.exit_code == 0 { "Completed" } else { "Error" },
            "message": "",
            "labels": c.labels,
            "annotations": c.annotations,
            "mounts": c.mounts.iter().map(|m| json!({
                "containerPath": m.container_path, "hostPath": m.host_path,
            })).collect::<Vec<_>>(),
            "logPath": c.log_path,
        },
        "info": {
            "sandboxID": c.pod_sandbox_id,
            "pid": if c.is_running() { c.pid.unwrap_or(0) } else { 0 },
        }
    })
}

fn inspect(sim: &Sim, args: &[String]) -> Result<i32> {
    let p = parse(args, INSPECT, false)?;
    if p.positional.is_empty() {
        bail!("ID cannot be empty");
    }
    let all = containers(sim)?;
    let output = p.get("-o").unwrap_or("json");
    for id in &p.positional {
        let c = find(&all, id)?;
        let v = inspect_json(c);
        let text = match output {
            "json" => serde_json::to_string_pretty(&v)? + "\n",
            "yaml" => serde_yaml::to_string(&v)?,
            "table" => format!(
                "ID: {}\nName: {}\nState: {}\nCreated: {}\nAttempt: {}\nImage: {}\n",
                c.id,
                c.name,
                c.state,
                ago(c.created_nanos()),
                c.attempt,
                c.image
            ),
            other => bail!("unsupported output format {other:?}"),
        };
        if p.has("-q") {
            println!("{}", c.id);
        } else {
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
    }
    Ok(0)
}

fn exec(sim: &Sim, cfg: &SimConfig, args: &[String]) -> Result<i32> {
    let p = parse(args, EXEC, true)?;
    if let Some(t) = p.get("--timeout") {
        t.parse::<u64>()
            .map_err(|_| anyhow!("invalid value {t:?} for flag -timeout"))?;
    }
    let Some((id, command)) = p.positional.split_first() else {
        bail!("ID cannot be empty");
    };
    let command: &[String] = match command.split_first() {
        Some((dd, rest)) if dd == "--" => rest,
        _ => command,
    };
    if command.is_empty() {
        bail!("command cannot be empty");
    }
    let all = containers(sim)?;
    let c = find(&all, id)?;
    if !c.is_running() {
        bail!(
            "execing command in container synchronously: rpc error: code = Unknown desc = container is in {} state",
            c.state
        );
    }
    if cfg.etcd.exec_fails {
        bail!("execing command in container synchronously: rpc error: code = Unknown desc = failed to exec in container: failed to start exec: OCI runtime exec failed: simulated failure (sim.json etcd.execFails): unknown");
    }
    let prog = command[0].rsplit('/').next().unwrap_or("");
    if c.name != "etcd" || prog != "etcdctl" {
        bail!(
            "execing command in container synchronously: rpc error: code = Unknown desc = failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: {:?}: executable file not found in $PATH: unknown",
            command[0]
        );
    }
    let root = sim.root(cfg);
    let out = match &cfg.real_etcdctl {
        Some(real) => crate::etcdctl::run_real(real, &root, c, &command[1..]),
        None => crate::etcdctl::run(&root, c, &cfg.etcd, cfg.tls_now_unix()?, &command[1..]),
    };
    let _ = std::io::stdout().lock().write_all(out.stdout.as_bytes());
    let _ = std::io::stderr().lock().write_all(out.stderr.as_bytes());
    Ok(out.code)
}

fn logs(sim: &Sim, args: &[String]) -> Result<i32> {
    let p = parse(args, LOGS, false)?;
    let [id] = p.positional.as_slice() else {
        bail!("ID cannot be empty");
    };
    let all = containers(sim)?;
    let c = find(&all, id)?;
    let text = match &c.log_path {
        Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
        None => String::new(),
    };
    let lines: Vec<&str> = text.lines().collect();
    let from = match p.get("--tail") {
        Some(n) => {
            let n: i64 = n.parse().map_err(|_| anyhow!("invalid --tail {n:?}"))?;
            if n < 0 {
                0
            } else {
                lines.len().saturating_sub(n as usize)
            }
        }
        None => 0,
    };
    for l in &lines[from..] {
        eprintln!("{l}");
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flag_forms() {
        let p = parse(
            &args(&["-aq", "--label", "a=b", "--label=c=d", "-o=json"]),
            PS,
            false,
        )
        .unwrap();
        assert!(p.has("-a") && p.has("-q"));
        assert_eq!(p.all("--label"), vec!["a=b", "c=d"]);
        assert_eq!(p.get("-o"), Some("json"));
        assert!(parse(&args(&["--bogus"]), PS, false).is_err());
        let p = parse(&args(&["-s", "ID", "etcdctl", "-w", "json"]), EXEC, true).unwrap();
        assert_eq!(p.positional, args(&["ID", "etcdctl", "-w", "json"]));
    }
}
