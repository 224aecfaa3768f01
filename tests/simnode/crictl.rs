//! crictl 1.36, reading the kubelet stand-in's `containers.json`:
//! `ps`, `pods`, `inspect`, `exec ... etcdctl`, `logs`, `version`.
//!
//! Like the real one it first finds its configuration (`-c`,
//! `$CRI_CONFIG_FILE`, `/etc/crictl.yaml` under the node root, then
//! `crictl.yaml` beside the program) and its runtime endpoint (`-r`,
//! `$CONTAINER_RUNTIME_ENDPOINT`, the config file's `runtime-endpoint`, else
//! the deprecated defaults in order), and connects: only sim.json's
//! `runtimeEndpoint` answers. Messages go to stderr in logrus' text format
//! (`time="..." level=fatal msg="..."`; `FATA[0000] ...` on a terminal).

use crate::regex::Regex;
use crate::sim::{self, Sim, SimConfig};
use crate::state::{self, Container, Sandbox};
use anyhow::{anyhow, bail, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// crictl's `defaultRuntimeEndpoints` (cmd/crictl/main_unix.go), in order.
pub const DEFAULT_ENDPOINTS: [&str; 3] = [
    "unix:///run/containerd/containerd.sock",
    "unix:///run/crio/crio.sock",
    "unix:///var/run/cri-dockerd.sock",
];
/// crictl's `defaultConfigPath`, a node path (under sim.json `root`).
const DEFAULT_CONFIG: &str = "/etc/crictl.yaml";
/// crictl's `truncatedIDLen`.
const TRUNC: usize = 13;

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
    flag(&["--profile-cpu"], true),
    flag(&["--profile-mem"], true),
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
    flag(&["-r", "--resolve-image-path"], false),
    flag(&["--namespace"], true),
];

const PODS: &[FlagSpec] = &[
    flag(&["--id"], true),
    flag(&["--name"], true),
    flag(&["--namespace"], true),
    flag(&["-s", "--state"], true),
    flag(&["--label"], true),
    flag(&["-v", "--verbose"], false),
    flag(&["-q", "--quiet"], false),
    flag(&["-o", "--output"], true),
    flag(&["-l", "--latest"], false),
    flag(&["-n", "--last"], true),
    flag(&["--no-trunc"], false),
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

const STOP: &[FlagSpec] = &[flag(&["-t", "--timeout"], true)];

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
        self.flags
            .iter()
            .any(|(n, v)| *n == name && v != "false" && v != "0")
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
    /// An IntFlag (`--last`), 0 when absent.
    fn int(&self, name: &str) -> Result<i64> {
        match self.get(name) {
            None => Ok(0),
            Some(v) => v
                .parse()
                .map_err(|_| anyhow!("invalid value {v:?} for flag {name}: parse error")),
        }
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

// ------------------------------------------------------------ logging

#[derive(Clone, Copy)]
enum Level {
    Error,
    Warning,
    Fatal,
}

/// logrus' TextFormatter as crictl leaves it: on a terminal `WARN[0000]
/// msg` (the colours left out), otherwise logfmt, `time="<RFC 3339>"
/// level=warning msg="..."` (values quoted with Go's %q when they hold
/// anything but `[A-Za-z0-9-._/@^+]`).
#[derive(Clone, Copy)]
struct Logrus {
    tty: bool,
}

impl Logrus {
    fn stderr() -> Logrus {
        Logrus {
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn line(&self, level: Level, msg: &str) -> String {
        let (short, long) = match level {
            Level::Error => ("ERRO", "error"),
            Level::Warning => ("WARN", "warning"),
            Level::Fatal => ("FATA", "fatal"),
        };
        if self.tty {
            return format!("{short}[0000] {msg}\n");
        }
        let now = time::OffsetDateTime::now_utc();
        let ts = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            now.year(),
            u8::from(now.month()),
            now.day(),
            now.hour(),
            now.minute(),
            now.second()
        );
        format!("time={} level={long} msg={}\n", go_quote(&ts), logfmt(msg))
    }

    fn emit(&self, level: Level, msg: &str) {
        let _ = std::io::stderr()
            .lock()
            .write_all(self.line(level, msg).as_bytes());
    }
}

/// logrus' `appendValue`: bare when every character is safe, else `%q`.
fn logfmt(v: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-._/@^+".contains(c);
    if v.chars().all(safe) {
        v.to_string()
    } else {
        go_quote(v)
    }
}

/// Go's `strconv.Quote` (`%q`).
pub fn go_quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\x07' => o.push_str("\\a"),
            '\x08' => o.push_str("\\b"),
            '\x0c' => o.push_str("\\f"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\x0b' => o.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                o.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    o.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    o.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Go's `log.Fatalf` (crictl uses the standard logger for `--state`):
/// `2006/01/02 15:04:05 msg`, exit 1.
fn go_log_fatal(msg: &str) -> i32 {
    let now = time::OffsetDateTime::now_utc();
    eprintln!(
        "{:04}/{:02}/{:02} {:02}:{:02}:{:02} {msg}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    );
    1
}

// ------------------------------------------------------------ endpoints

/// The socket path of a CRI endpoint, as cri-client's
/// `GetAddressAndDialer` reads it: `unix://` URLs, a bare path taken as
/// `unix://` (deprecated form), `tcp://` refused ("only support unix socket
/// endpoint"), any other scheme "protocol ... not supported".
fn socket_path(endpoint: &str) -> Result<String, String> {
    // Go's url.getScheme: [A-Za-z][A-Za-z0-9+-.]* before the first ':'.
    let scheme = endpoint.find(':').and_then(|i| {
        let s = &endpoint[..i];
        let ok = s.chars().enumerate().all(|(j, c)| {
            c.is_ascii_alphabetic() || (j > 0 && (c.is_ascii_digit() || "+-.".contains(c)))
        });
        (ok && !s.is_empty()).then(|| (s.to_ascii_lowercase(), &endpoint[i + 1..]))
    });
    match scheme {
        None => socket_path(&format!("unix://{endpoint}")),
        Some((s, rest)) if s == "unix" => {
            let rest = rest.split(['?', '#']).next().unwrap_or("");
            Ok(match rest.strip_prefix("//") {
                Some(auth_path) => auth_path
                    .find('/')
                    .map(|i| auth_path[i..].to_string())
                    .unwrap_or_default(),
                None if rest.starts_with('/') => rest.to_string(),
                None => String::new(),
            })
        }
        Some((s, _)) if s == "tcp" => Err("only support unix socket endpoint".to_string()),
        Some((s, _)) => Err(format!("protocol {} not supported", go_quote(&s))),
    }
}

/// `/var/run` is a symlink to `/run` on every current distribution.
fn same_socket(a: &str, b: &str) -> bool {
    let norm = |p: &str| match p.strip_prefix("/var/run/") {
        Some(rest) => format!("/run/{rest}"),
        None => p.to_string(),
    };
    !a.is_empty() && norm(a) == norm(b)
}

/// Which API a connection is for (the wording of cri-client's errors).
#[derive(Clone, Copy)]
enum Api {
    Runtime,
    Image,
}

/// What the command line, the environment and the config file chose.
struct Endpoints {
    runtime: String,
    runtime_set: bool,
    image: String,
    image_set: bool,
}

/// One crictl invocation.
struct Cx<'a> {
    sim: &'a Sim,
    cfg: SimConfig,
    root: PathBuf,
    log: Logrus,
    ep: Endpoints,
    /// crictl's connection timeout (`-t`, the config file's `timeout`,
    /// default 2 s): how long a dial to a runtime that never answers waits.
    timeout: Duration,
}

/// crictl's `defaultTimeout` on Linux.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct ConfigFile {
    runtime_endpoint: String,
    image_endpoint: String,
    /// Seconds; 0 or less: the default.
    timeout: i64,
}

/// The directory crictl looks in for `crictl.yaml` after the default config
/// path (real crictl: its executable's directory): the directory of the
/// `crictl` it was called as, else `<sim>/bin`.
fn program_dir(sim: &Sim) -> PathBuf {
    let argv0 = std::env::args().next().unwrap_or_default();
    let dir = match Sim::from_argv0(&argv0) {
        Ok(s) if argv0.rsplit('/').next() == Some("crictl") => s
            .dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| sim.dir.join("bin")),
        _ => sim.dir.join("bin"),
    };
    // os.Executable() is absolute.
    match std::env::current_dir() {
        Ok(cwd) if dir.is_relative() => cwd.join(dir),
        _ => dir,
    }
}

impl Cx<'_> {
    /// crictl's `app.Before`: the config file, then the endpoints.
    fn before(&mut self, globals: &Parsed, program_dir: &Path) -> Result<()> {
        let env = |k: &str| std::env::var(k).ok();
        let (cfg_path, cfg_set) = match globals.get("-c") {
            Some(v) => (v.to_string(), true),
            None => match env("CRI_CONFIG_FILE") {
                Some(v) => (v, true),
                None => (DEFAULT_CONFIG.to_string(), false),
            },
        };
        let config = match self.server_config(&cfg_path, program_dir) {
            Ok(c) => Some(c),
            Err(e) if cfg_set => bail!(e),
            Err(_) => None,
        };
        let flag_or_env = |flag: &str, var: &str| -> (String, bool) {
            match globals.get(flag) {
                Some(v) => (v.to_string(), true),
                None => match env(var) {
                    Some(v) => (v, true),
                    None => (String::new(), false),
                },
            }
        };
        // crictl's `getTimeout`: `-t` (a Go duration; 0 or less is the
        // default), else the file's `timeout` seconds when above 0.
        let flag_timeout = match globals.get("-t") {
            Some(v) => Some(crate::etcdctl::parse_go_duration(v).ok_or_else(|| {
                anyhow!(
                    "invalid value {} for flag -timeout: parse error",
                    go_quote(v)
                )
            })?),
            None => None,
        };
        self.timeout = match (flag_timeout, &config) {
            (Some(d), _) if !d.is_zero() => d,
            (Some(_), _) => DEFAULT_TIMEOUT,
            (None, Some(c)) if c.timeout > 0 => Duration::from_secs(c.timeout as u64),
            _ => DEFAULT_TIMEOUT,
        };
        let (r, r_set) = flag_or_env("-r", "CONTAINER_RUNTIME_ENDPOINT");
        let (i, i_set) = flag_or_env("-i", "IMAGE_SERVICE_ENDPOINT");
        self.ep = match config {
            None => Endpoints {
                runtime: r,
                runtime_set: r_set,
                image: i,
                image_set: i_set,
            },
            // Command line flags (and their variables) override the file.
            Some(c) => {
                let pick = |v: String, set: bool, file: String| {
                    if set {
                        (v, true)
                    } else if !file.is_empty() {
                        (file, true)
                    } else {
                        (v, false)
                    }
                };
                let (runtime, runtime_set) = pick(r, r_set, c.runtime_endpoint);
                let (image, image_set) = pick(i, i_set, c.image_endpoint);
                Endpoints {
                    runtime,
                    runtime_set,
                    image,
                    image_set,
                }
            }
        };
        Ok(())
    }

    /// pkg/common `GetServerConfigFromFile`: the file, else (with a warning)
    /// `crictl.yaml` in the program's directory.
    fn server_config(&self, path: &str, program_dir: &Path) -> Result<ConfigFile, String> {
        let node = sim::under_root(&self.root, path);
        let file = match std::fs::metadata(&node) {
            Ok(_) => node,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let next = program_dir.join("crictl.yaml");
                self.log.emit(
                    Level::Warning,
                    &format!(
                        "Config {} does not exist, trying next: {}",
                        go_quote(path),
                        go_quote(&next.to_string_lossy())
                    ),
                );
                if std::fs::metadata(&next).is_err() {
                    return Err(format!(
                        "load config file: stat {}: no such file or directory",
                        next.display()
                    ));
                }
                next
            }
            Err(e) => return Err(format!("load config file: stat {path}: {}", errno_text(&e))),
        };
        let bytes = std::fs::read(&file)
            .map_err(|e| format!("load config file: read {path}: {}", errno_text(&e)))?;
        parse_config_file(&bytes).map_err(|e| format!("load config file: {e}"))
    }

    /// Dials one endpoint (cri-client `NewRemote{Runtime,Image}Service`
    /// and its version check): only sim.json `runtimeEndpoint` answers.
    fn dial(&self, endpoint: &str, api: Api) -> Result<(), String> {
        let path = socket_path(endpoint)?;
        let live = socket_path(&self.cfg.runtime_endpoint).unwrap_or_default();
        if same_socket(&path, &live) {
            return Ok(());
        }
        let api_name = match api {
            Api::Runtime => "runtime",
            Api::Image => "image",
        };
        let node_path = sim::under_root(&self.root, &path);
        // A socket someone listens on that is not the runtime: a hung
        // runtime. gRPC waits for the connection to become ready until
        // crictl's timeout (real crictl 1.36: `-t`, default 2 s).
        if !path.is_empty() && std::os::unix::net::UnixStream::connect(&node_path).is_ok() {
            std::thread::sleep(self.timeout);
            return Err(format!(
                "validate service connection: validate CRI v1 {api_name} API for endpoint {}: rpc error: code = DeadlineExceeded desc = context deadline exceeded while waiting for connections to become ready",
                go_quote(endpoint)
            ));
        }
        let why = if !path.is_empty() && node_path.exists() {
            "connection refused"
        } else {
            "no such file or directory"
        };
        let desc = format!("transport: Error while dialing: dial unix {path}: connect: {why}");
        Err(format!(
            "validate service connection: validate CRI v1 {api_name} API for endpoint {}: rpc error: code = Unavailable desc = connection error: desc = {}",
            go_quote(endpoint),
            go_quote(&desc)
        ))
    }

    /// crictl's `getRuntimeService` / `getImageService`.
    fn connect(&self, api: Api) -> Result<String> {
        let (endpoint, set) = match api {
            Api::Runtime => {
                if self.ep.runtime_set && self.ep.runtime.is_empty() {
                    bail!("--runtime-endpoint is not set");
                }
                (self.ep.runtime.clone(), self.ep.runtime_set)
            }
            Api::Image if self.ep.image.is_empty() => {
                if self.ep.runtime_set && self.ep.runtime.is_empty() {
                    bail!("--image-endpoint is not set");
                }
                (self.ep.runtime.clone(), self.ep.runtime_set)
            }
            Api::Image => (self.ep.image.clone(), self.ep.image_set),
        };
        if set {
            return self
                .dial(&endpoint, api)
                .map(|()| endpoint)
                .map_err(|e| anyhow!(e));
        }
        self.log.emit(
            Level::Warning,
            &format!(
                "{} connect using default endpoints: [{}]. As the default settings are now deprecated, you should set the endpoint instead.",
                match api {
                    Api::Runtime => "runtime",
                    Api::Image => "Image",
                },
                DEFAULT_ENDPOINTS.join(" ")
            ),
        );
        let mut last = String::new();
        for ep in DEFAULT_ENDPOINTS {
            match self.dial(ep, api) {
                Ok(()) => return Ok(ep.to_string()),
                Err(e) => {
                    self.log.emit(Level::Error, &e);
                    last = e;
                }
            }
        }
        Err(anyhow!(last))
    }

    fn runtime(&self) -> Result<String> {
        self.connect(Api::Runtime)
    }

    fn image(&self) -> Result<String> {
        self.connect(Api::Image)
    }
}

fn errno_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

/// pkg/common `ReadConfig`: a YAML mapping of crictl's options; any other
/// key is an error.
fn parse_config_file(bytes: &[u8]) -> Result<ConfigFile, String> {
    let v: serde_yaml::Value = serde_yaml::from_slice(bytes).map_err(|e| format!("yaml: {e}"))?;
    let mut c = ConfigFile::default();
    let serde_yaml::Value::Mapping(m) = v else {
        return Ok(c);
    };
    for (k, v) in m {
        let name = match k {
            serde_yaml::Value::String(s) => s,
            other => serde_yaml::to_string(&other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        let value = match v {
            serde_yaml::Value::String(s) => s,
            serde_yaml::Value::Null => String::new(),
            other => serde_yaml::to_string(&other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        let go_bool = |v: &str| {
            matches!(
                v,
                "1" | "t"
                    | "T"
                    | "TRUE"
                    | "true"
                    | "True"
                    | "0"
                    | "f"
                    | "F"
                    | "FALSE"
                    | "false"
                    | "False"
            )
        };
        match name.as_str() {
            "runtime-endpoint" => c.runtime_endpoint = value,
            "image-endpoint" => c.image_endpoint = value,
            "timeout" => {
                c.timeout = value.parse::<i64>().map_err(|_| {
                    format!(
                        "parsing config option '{name}': strconv.Atoi: parsing {}: invalid syntax",
                        go_quote(&value)
                    )
                })?;
            }
            "debug" | "pull-image-on-create" | "disable-pull-on-run" => {
                if !go_bool(&value) {
                    return Err(format!(
                        "parsing config option '{name}': strconv.ParseBool: parsing {}: invalid syntax",
                        go_quote(&value)
                    ));
                }
            }
            _ => return Err(format!("Config option '{name}' is not valid")),
        }
    }
    Ok(c)
}

// ------------------------------------------------------------ main

pub fn main(sim: Option<Sim>, args: &[String]) -> i32 {
    let log = Logrus::stderr();
    let Some(sim) = sim else {
        log.emit(
            Level::Fatal,
            "crictl (simnode): cannot find the simulation directory",
        );
        return 1;
    };
    sim.append_log("crictl.log", &args.join(" "));
    match run(&sim, args, log) {
        Ok(code) => code,
        Err(e) => {
            log.emit(Level::Fatal, &format!("{e:#}"));
            1
        }
    }
}

fn run(sim: &Sim, args: &[String], log: Logrus) -> Result<i32> {
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
    let globals = parse(&args[..i.min(args.len())], GLOBAL, false)?;
    let Some(cmd) = args.get(i) else {
        bail!("usage: crictl [global options] command [command options] (simnode: ps, pods, inspect, exec, logs, version)");
    };
    let rest = &args[i + 1..];
    let cfg = sim.load_config()?;
    let root = sim.root(&cfg);
    let mut cx = Cx {
        sim,
        cfg,
        root,
        log,
        ep: Endpoints {
            runtime: String::new(),
            runtime_set: false,
            image: String::new(),
            image_set: false,
        },
        timeout: DEFAULT_TIMEOUT,
    };
    cx.before(&globals, &program_dir(sim))?;
    match cmd.as_str() {
        "ps" => ps(&cx, rest),
        "pods" => pods(&cx, rest),
        "inspect" => inspect(&cx, rest),
        "exec" => exec(&cx, rest),
        "logs" => logs(&cx, rest),
        "stop" => stop(&cx, rest),
        "version" => {
            let ep = cx.runtime()?;
            let path = socket_path(&ep).unwrap_or_default();
            let (name, version) = if path.contains("crio") {
                ("cri-o", "1.31.0")
            } else if path.contains("docker") {
                ("docker", "27.3.1")
            } else {
                ("containerd", "v1.7.22")
            };
            println!("Version:  0.1.0\nRuntimeName:  {name}\nRuntimeVersion:  {version}\nRuntimeApiVersion:  v1");
            Ok(0)
        }
        other => bail!("nvke-simnode crictl: unsupported command {other:?}"),
    }
}

// ------------------------------------------------------------ output

/// A JSON value whose objects keep their field order: crictl prints
/// protobuf messages with protojson (`EmitDefaultValues`, two-space
/// indent), fields in declaration order, map keys sorted.
enum Pj {
    S(String),
    N(i64),
    O(Vec<(&'static str, Pj)>),
    M(BTreeMap<String, String>),
    A(Vec<Pj>),
}

impl Pj {
    fn s(v: &str) -> Pj {
        Pj::S(v.to_string())
    }

    /// protojson's multi-line layout: `"key": value`, `[]` and `{}` when
    /// empty, one value per line, two spaces per level.
    fn write(&self, out: &mut String, indent: usize) {
        let q = |s: &str| serde_json::to_string(s).expect("json string");
        let pad = |n: usize| "  ".repeat(n);
        match self {
            Pj::S(s) => out.push_str(&q(s)),
            Pj::N(n) => out.push_str(&n.to_string()),
            Pj::A(v) if v.is_empty() => out.push_str("[]"),
            Pj::A(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&pad(indent + 1));
                    x.write(out, indent + 1);
                }
                out.push('\n');
                out.push_str(&pad(indent));
                out.push(']');
            }
            Pj::M(m) if m.is_empty() => out.push_str("{}"),
            Pj::O(f) if f.is_empty() => out.push_str("{}"),
            Pj::M(m) => {
                let fields: Vec<(&str, Pj)> =
                    m.iter().map(|(k, v)| (k.as_str(), Pj::s(v))).collect();
                write_fields(&fields, out, indent);
            }
            Pj::O(f) => {
                let fields: Vec<(&str, &Pj)> = f.iter().map(|(k, v)| (*k, v)).collect();
                write_fields_ref(&fields, out, indent);
            }
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Pj::S(s) => Value::String(s.clone()),
            Pj::N(n) => Value::from(*n),
            Pj::A(v) => Value::Array(v.iter().map(Pj::to_value).collect()),
            Pj::M(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect(),
            ),
            Pj::O(f) => Value::Object(
                f.iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// `-o json`: protojson + `fmt.Println`.
    fn json(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s.push('\n');
        s
    }

    /// `-o yaml`: `yaml.JSONToYAML` (keys sorted) + `fmt.Println`.
    fn yaml(&self) -> Result<String> {
        Ok(serde_yaml::to_string(&self.to_value())? + "\n")
    }
}

fn write_fields(fields: &[(&str, Pj)], out: &mut String, indent: usize) {
    let refs: Vec<(&str, &Pj)> = fields.iter().map(|(k, v)| (*k, v)).collect();
    write_fields_ref(&refs, out, indent);
}

fn write_fields_ref(fields: &[(&str, &Pj)], out: &mut String, indent: usize) {
    let q = |s: &str| serde_json::to_string(s).expect("json string");
    out.push('{');
    for (i, (k, v)) in fields.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        out.push_str(&"  ".repeat(indent + 1));
        out.push_str(&q(k));
        out.push_str(": ");
        v.write(out, indent + 1);
    }
    out.push('\n');
    out.push_str(&"  ".repeat(indent));
    out.push('}');
}

/// text/tabwriter as crictl's `newDefaultTableDisplay` sets it up
/// (minwidth 20, padding 3, spaces): every cell but the last of a row is
/// padded to its column's width.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter(|r| i + 1 < r.len())
                .map(|r| r[i].chars().count() + 3)
                .max()
                .unwrap_or(0)
                .max(20)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        for (i, cell) in r.iter().enumerate() {
            if i + 1 < r.len() {
                out.push_str(&format!("{cell:<w$}", w = widths[i]));
            } else {
                out.push_str(cell);
            }
        }
        out.push('\n');
    }
    out
}

fn write_stdout(s: &str) {
    let _ = std::io::stdout().lock().write_all(s.as_bytes());
}

/// go-units `HumanDuration` + " ago", as crictl's tables print `CREATED`.
fn ago(nanos: i128) -> String {
    let d = ((sim::now_nanos() - nanos).max(0) as f64) / 1e9;
    let secs = d as i64;
    let minutes = (d / 60.0) as i64;
    let hours = (d / 3600.0 + 0.5) as i64;
    let h = if secs < 1 {
        "Less than a second".to_string()
    } else if secs == 1 {
        "1 second".to_string()
    } else if secs < 60 {
        format!("{secs} seconds")
    } else if minutes == 1 {
        "About a minute".to_string()
    } else if minutes < 60 {
        format!("{minutes} minutes")
    } else if hours == 1 {
        "About an hour".to_string()
    } else if hours < 48 {
        format!("{hours} hours")
    } else if hours < 24 * 7 * 2 {
        format!("{} days", hours / 24)
    } else if hours < 24 * 30 * 2 {
        format!("{} weeks", hours / 24 / 7)
    } else if hours < 24 * 365 * 2 {
        format!("{} months", hours / 24 / 30)
    } else {
        format!("{} years", (d / 3600.0) as i64 / 24 / 365)
    };
    format!("{h} ago")
}

/// Go's `time.Time` `%v` for a `time.Unix(0, nanos)` in UTC:
/// `2026-11-30 00:00:00.123456789 +0000 UTC` (trailing zeros trimmed).
fn go_time(nanos: i128) -> String {
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp_nanos(nanos) else {
        return String::new();
    };
    let frac = match t.nanosecond() {
        0 => String::new(),
        n => format!(".{n:09}").trim_end_matches('0').to_string(),
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{frac} +0000 UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

fn trunc(id: &str, no_trunc: bool) -> String {
    if no_trunc {
        id.to_string()
    } else {
        id.chars().take(TRUNC).collect()
    }
}

/// crictl's `parseLabelStringSlice`: each `k=v` must split into exactly two
/// parts on `=`.
fn parse_labels(ls: &[&str]) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for l in ls {
        let parts: Vec<&str> = l.split('=').collect();
        let [k, v] = parts.as_slice() else {
            bail!("incorrectly specified label: {l}");
        };
        m.insert(k.to_string(), v.to_string());
    }
    Ok(m)
}

/// crictl's `matchesRegex`: empty matches everything, an invalid pattern
/// nothing.
fn matches_regex(pattern: Option<&str>, target: &str) -> bool {
    match pattern {
        None | Some("") => true,
        Some(p) => Regex::new(p).map(|re| re.is_match(target)).unwrap_or(false),
    }
}

/// The runtime's ID filter (containerd's truncindex): a full ID, or a
/// prefix of exactly one ID; anything else matches nothing.
fn resolve_id<'a>(ids: impl Iterator<Item = &'a str> + Clone, q: &str) -> Option<String> {
    if ids.clone().any(|id| id == q) {
        return Some(q.to_string());
    }
    let hits: Vec<&str> = ids.filter(|id| id.starts_with(q)).collect();
    match hits.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

/// `--latest` / `--last N` (last wins; 0 = unlimited).
fn limit<T>(list: &mut Vec<T>, latest: bool, last: i64) {
    let mut n = list.len();
    if latest {
        n = 1;
    }
    if last > 0 {
        n = last as usize;
    }
    list.truncate(n);
}

// ------------------------------------------------------------ ps

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

/// The image ID containerd reports (`imageRef`; the kubelet puts it in
/// `image.image` too).
fn image_ref(image: &str) -> String {
    use sha2::Digest;
    format!(
        "sha256:{}",
        sim::hex(&sha2::Sha256::digest(image.as_bytes()))
    )
}

/// A `runtime.v1.Container` as `crictl ps -o json` prints it.
fn ps_json(c: &Container) -> Pj {
    Pj::O(vec![
        ("id", Pj::s(&c.id)),
        ("podSandboxId", Pj::s(&c.pod_sandbox_id)),
        (
            "metadata",
            Pj::O(vec![
                ("name", Pj::s(&c.name)),
                ("attempt", Pj::N(i64::from(c.attempt))),
            ]),
        ),
        (
            "image",
            Pj::O(vec![
                ("image", Pj::s(&image_ref(&c.image))),
                ("annotations", Pj::M(BTreeMap::new())),
                ("userSpecifiedImage", Pj::s(&c.image)),
                ("runtimeHandler", Pj::s("")),
                ("imageRef", Pj::s("")),
            ]),
        ),
        ("imageRef", Pj::s(&image_ref(&c.image))),
        ("state", Pj::s(&c.state)),
        ("createdAt", Pj::s(&c.created_at)),
        ("labels", Pj::M(c.labels.clone())),
        ("annotations", Pj::M(c.annotations.clone())),
        ("imageId", Pj::s("")),
    ])
}

fn state_word(state: &str) -> &str {
    match state {
        state::RUNNING => "Running",
        state::EXITED => "Exited",
        "CONTAINER_CREATED" => "Created",
        _ => "Unknown",
    }
}

fn ps(cx: &Cx, args: &[String]) -> Result<i32> {
    let p = parse(args, PS, false)?;
    if let Some(extra) = p.positional.first() {
        bail!("crictl ps takes no arguments (got {extra:?})");
    }
    let last = p.int("-n")?;
    cx.runtime()?;
    cx.image()?;
    let labels = parse_labels(&p.all("--label"))?;
    // The runtime's filter: state (running unless -a or --state; none with
    // --latest/--last), ID, pod sandbox ID, labels.
    let mut state_filter = match p.get("-s") {
        None if p.has("-a") => None,
        None => Some(state::RUNNING.to_string()),
        Some(s) => Some(match s.to_ascii_lowercase().as_str() {
            "running" => state::RUNNING.to_string(),
            "exited" => state::EXITED.to_string(),
            "created" => "CONTAINER_CREATED".to_string(),
            "unknown" => "CONTAINER_UNKNOWN".to_string(),
            _ => {
                return Ok(go_log_fatal(
                    "--state should be one of created, running, exited or unknown",
                ))
            }
        }),
    };
    if p.has("-l") || last > 0 {
        state_filter = None;
    }
    let all = containers(cx.sim)?;
    let id = match p.get("--id") {
        None | Some("") => None,
        Some(q) => Some(resolve_id(all.iter().map(|c| c.id.as_str()), q).unwrap_or_default()),
    };
    let pod = match p.get("-p") {
        None | Some("") => None,
        Some(q) => {
            let sbs = state::load(cx.sim)?.sandboxes;
            Some(resolve_id(sbs.iter().map(|s| s.id.as_str()), q).unwrap_or_else(|| q.to_string()))
        }
    };
    let image = p.get("--image").filter(|s| !s.is_empty());
    let mut list: Vec<Container> = all
        .into_iter()
        .filter(|c| state_filter.as_deref().is_none_or(|s| c.state == s))
        .filter(|c| id.as_deref().is_none_or(|id| c.id == id))
        .filter(|c| pod.as_deref().is_none_or(|pod| c.pod_sandbox_id == pod))
        .filter(|c| labels.iter().all(|(k, v)| c.labels.get(k) == Some(v)))
        .filter(|c| {
            image.is_none_or(|img| {
                let r = image_ref(&c.image);
                img == c.image || img == r || r.strip_prefix("sha256:") == Some(img)
            })
        })
        .filter(|c| matches_regex(p.get("--name"), &c.name))
        .filter(|c| {
            let ns = c
                .labels
                .get("io.kubernetes.pod.namespace")
                .map(String::as_str)
                .unwrap_or("unknown");
            matches_regex(p.get("--namespace"), ns)
        })
        .collect();
    limit(&mut list, p.has("-l"), last);
    let doc = || {
        Pj::O(vec![(
            "containers",
            Pj::A(list.iter().map(ps_json).collect()),
        )])
    };
    let out = match p.get("-o").unwrap_or("table") {
        "json" => doc().json(),
        "yaml" => doc().yaml()?,
        "table" => {
            let no_trunc = p.has("--no-trunc");
            if p.has("-q") {
                list.iter().map(|c| format!("{}\n", c.id)).collect()
            } else if p.has("-v") {
                let mut s = String::new();
                for c in &list {
                    s.push_str(&format!(
                        "ID: {}\nPodID: {}\nNamespace: {}\nName: {}\nAttempt: {}\nState: {}\nImage: {}\nCreated: {}\n",
                        c.id,
                        c.pod_sandbox_id,
                        c.namespace,
                        c.name,
                        c.attempt,
                        state_word(&c.state),
                        image_ref(&c.image),
                        ago(c.created_nanos())
                    ));
                    s.push_str(&kv_block("Labels", &c.labels));
                    s.push_str(&kv_block("Annotations", &c.annotations));
                    s.push('\n');
                }
                s
            } else {
                let mut rows = vec![[
                    "CONTAINER",
                    "IMAGE",
                    "CREATED",
                    "STATE",
                    "NAME",
                    "ATTEMPT",
                    "POD ID",
                    "POD",
                    "NAMESPACE",
                ]
                .map(String::from)
                .to_vec()];
                for c in &list {
                    let r = image_ref(&c.image);
                    let image = if p.has("-r") {
                        c.image.clone()
                    } else if no_trunc {
                        r
                    } else {
                        trunc(r.trim_start_matches("sha256:"), false)
                    };
                    let label = |k: &str| c.labels.get(k).cloned().unwrap_or("unknown".into());
                    rows.push(vec![
                        trunc(&c.id, no_trunc),
                        image,
                        ago(c.created_nanos()),
                        state_word(&c.state).to_string(),
                        c.name.clone(),
                        c.attempt.to_string(),
                        trunc(&c.pod_sandbox_id, no_trunc),
                        label("io.kubernetes.pod.name"),
                        label("io.kubernetes.pod.namespace"),
                    ]);
                }
                table(&rows)
            }
        }
        other => bail!("listing containers: unsupported output format {other:?}"),
    };
    write_stdout(&out);
    Ok(0)
}

fn kv_block(title: &str, m: &BTreeMap<String, String>) -> String {
    let mut s = format!("{title}:\n");
    for (k, v) in m {
        s.push_str(&format!("\t{k} -> {v}\n"));
    }
    s
}

// ------------------------------------------------------------ pods

/// A `runtime.v1.PodSandbox` as `crictl pods -o json` prints it.
fn pod_json(s: &Sandbox) -> Pj {
    Pj::O(vec![
        ("id", Pj::s(&s.id)),
        (
            "metadata",
            Pj::O(vec![
                ("name", Pj::s(&s.name)),
                ("uid", Pj::s(&s.uid)),
                ("namespace", Pj::s(&s.namespace)),
                ("attempt", Pj::N(i64::from(s.attempt))),
            ]),
        ),
        ("state", Pj::s(&s.state)),
        ("createdAt", Pj::s(&s.created_at)),
        ("labels", Pj::M(s.labels.clone())),
        ("annotations", Pj::M(s.annotations.clone())),
        ("runtimeHandler", Pj::s(&s.runtime_handler)),
    ])
}

fn pod_state_word(state: &str) -> &str {
    if state == state::SANDBOX_READY {
        "Ready"
    } else {
        "NotReady"
    }
}

fn pods(cx: &Cx, args: &[String]) -> Result<i32> {
    let p = parse(args, PODS, false)?;
    let last = p.int("-n")?;
    cx.runtime()?;
    let labels = parse_labels(&p.all("--label"))?;
    let state_filter = match p.get("-s") {
        None | Some("") => None,
        Some(s) => match s.to_ascii_lowercase().as_str() {
            "ready" => Some(state::SANDBOX_READY),
            "notready" => Some(state::SANDBOX_NOTREADY),
            _ => return Ok(go_log_fatal("--state should be ready or notready")),
        },
    };
    let mut all = state::load(cx.sim)?.sandboxes;
    all.sort_by_key(|s| std::cmp::Reverse(s.created_nanos()));
    let id = match p.get("--id") {
        None | Some("") => None,
        Some(q) => Some(resolve_id(all.iter().map(|s| s.id.as_str()), q).unwrap_or_default()),
    };
    let mut list: Vec<Sandbox> = all
        .into_iter()
        .filter(|s| id.as_deref().is_none_or(|id| s.id == id))
        .filter(|s| state_filter.is_none_or(|st| s.state == st))
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .filter(|s| matches_regex(p.get("--name"), &s.name))
        .filter(|s| matches_regex(p.get("--namespace"), &s.namespace))
        .collect();
    limit(&mut list, p.has("-l"), last);
    let doc = || Pj::O(vec![("items", Pj::A(list.iter().map(pod_json).collect()))]);
    let out = match p.get("-o").unwrap_or("table") {
        "json" => doc().json(),
        "yaml" => doc().yaml()?,
        "table" => {
            let no_trunc = p.has("--no-trunc");
            if p.has("-q") {
                list.iter().map(|s| format!("{}\n", s.id)).collect()
            } else if p.has("-v") {
                let mut o = String::new();
                for s in &list {
                    o.push_str(&format!(
                        "ID: {}\nName: {}\nUID: {}\nNamespace: {}\n",
                        s.id, s.name, s.uid, s.namespace
                    ));
                    if s.attempt != 0 {
                        o.push_str(&format!("Attempt: {}\n", s.attempt));
                    }
                    o.push_str(&format!(
                        "Status: {}\nCreated: {}\n",
                        pod_state_word(&s.state),
                        go_time(s.created_nanos())
                    ));
                    o.push_str(&kv_block("Labels", &s.labels));
                    o.push_str(&kv_block("Annotations", &s.annotations));
                    o.push_str("Runtime: (default)\n\n");
                }
                o
            } else {
                let mut rows = vec![[
                    "POD ID",
                    "CREATED",
                    "STATE",
                    "NAME",
                    "NAMESPACE",
                    "ATTEMPT",
                    "RUNTIME",
                ]
                .map(String::from)
                .to_vec()];
                for s in &list {
                    rows.push(vec![
                        trunc(&s.id, no_trunc),
                        ago(s.created_nanos()),
                        pod_state_word(&s.state).to_string(),
                        s.name.clone(),
                        s.namespace.clone(),
                        s.attempt.to_string(),
                        if s.runtime_handler.is_empty() {
                            "(default)".to_string()
                        } else {
                            s.runtime_handler.clone()
                        },
                    ]);
                }
                table(&rows)
            }
        }
        other => bail!("listing pod sandboxes: unsupported output format {other:?}"),
    };
    write_stdout(&out);
    Ok(0)
}

// ------------------------------------------------------------ inspect

fn inspect_json(c: &Container) -> Value {
    let t = |s: &str| sim::rfc3339_nanos(s.parse().unwrap_or(0));
    serde_json::json!({
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
            "mounts": c.mounts.iter().map(|m| serde_json::json!({
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

fn inspect(cx: &Cx, args: &[String]) -> Result<i32> {
    let p = parse(args, INSPECT, false)?;
    cx.runtime()?;
    cx.image()?;
    if p.positional.is_empty() {
        bail!("ID cannot be empty");
    }
    let all = containers(cx.sim)?;
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
            write_stdout(&text);
        }
    }
    Ok(0)
}

// ------------------------------------------------------------ exec

fn exec(cx: &Cx, args: &[String]) -> Result<i32> {
    let p = parse(args, EXEC, true)?;
    let timeout = match p.get("--timeout") {
        None => 0,
        Some(t) => t
            .parse::<i64>()
            .map_err(|_| anyhow!("invalid value {t:?} for flag -timeout: parse error"))?,
    };
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
    cx.runtime()?;
    cx.image()?;
    let sync = p.has("-s");
    // crictl's wrapping of every error of one exec.
    let ctx = if sync {
        format!("execing command in container {id} synchronously")
    } else {
        format!("execing command in container {id}")
    };
    let all = containers(cx.sim)?;
    let hits: Vec<&Container> = all
        .iter()
        .filter(|c| c.id.starts_with(id.as_str()))
        .collect();
    let c = match hits.as_slice() {
        [one] if !id.is_empty() => *one,
        _ => bail!(
            "{ctx}: rpc error: code = NotFound desc = failed to find container {} in store: not found",
            go_quote(id)
        ),
    };
    if !c.is_running() {
        bail!(
            "{ctx}: rpc error: code = Unknown desc = container is in {} state",
            c.state
        );
    }
    if cx.cfg.etcd.exec_fails {
        bail!("{ctx}: rpc error: code = Unknown desc = failed to exec in container: failed to start exec: OCI runtime exec failed: simulated failure (sim.json etcd.execFails): unknown");
    }
    let prog = command[0].rsplit('/').next().unwrap_or("");
    if c.name != "etcd" || prog != "etcdctl" {
        bail!(
            "{ctx}: rpc error: code = Unknown desc = failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: {}: executable file not found in $PATH: unknown",
            go_quote(&command[0])
        );
    }
    let root = cx.root.clone();
    let real = cx.cfg.real_etcdctl.clone();
    let knobs = cx.cfg.etcd.clone();
    let tls_now = cx.cfg.tls_now_unix()?;
    let ctr = c.clone();
    let argv: Vec<String> = command[1..].to_vec();
    let run = move || match &real {
        Some(real) => crate::etcdctl::run_real(real, &root, &ctr, &argv),
        None => crate::etcdctl::run(&root, &ctr, &knobs, tls_now, &argv),
    };
    if !sync {
        // Streaming exec: the command's own stdout and stderr; a non-zero
        // exit becomes crictl's error (and exit code 1).
        let out = run();
        write_stdout(&out.stdout);
        let _ = std::io::stderr().lock().write_all(out.stderr.as_bytes());
        if out.code != 0 {
            bail!("{ctx}: command terminated with exit code {}", out.code);
        }
        return Ok(0);
    }
    // ExecSync: the runtime kills the command after --timeout seconds.
    let out = if timeout > 0 {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(run());
        });
        match rx.recv_timeout(Duration::from_secs(timeout as u64)) {
            Ok(out) => out,
            Err(_) => bail!(
                "{ctx}: rpc error: code = Unknown desc = failed to exec in container: timeout {timeout}s exceeded: context deadline exceeded"
            ),
        }
    } else {
        run()
    };
    if out.code != 0 {
        // cri-client turns a non-zero exit into an error; crictl prints
        // nothing of the command's output but that error.
        bail!(
            "{ctx}: command '{}' exited with {}: {}",
            command.join(" "),
            out.code,
            out.stderr
        );
    }
    // crictl prints stdout, then stderr, both on stdout (fmt.Println each).
    write_stdout(&format!("{}\n{}\n", out.stdout, out.stderr));
    Ok(0)
}

// ------------------------------------------------------------ logs

/// `crictl stop [--timeout S] ID...`, as the CRI's StopContainer: SIGTERM
/// to the container's process, SIGKILL once `--timeout` seconds passed
/// (0, crictl's default: at once); prints each ID stopped. The kubelet sees
/// the process end and, as a static pod's restart policy says, starts a
/// new container from the same manifest.
fn stop(cx: &Cx, args: &[String]) -> Result<i32> {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let p = parse(args, STOP, false)?;
    cx.runtime()?;
    if p.positional.is_empty() {
        bail!("ID cannot be empty");
    }
    let timeout: u64 = match p.get("--timeout") {
        Some(t) => t.parse().map_err(|_| anyhow!("invalid --timeout {t:?}"))?,
        None => 0,
    };
    let all = containers(cx.sim)?;
    for id in &p.positional {
        let c = find(&all, id)?;
        if let (true, Some(pid)) = (c.is_running(), c.pid) {
            let pid = Pid::from_raw(pid as i32);
            let gone = |_: ()| kill(pid, None).is_err();
            let signal = if timeout == 0 {
                Signal::SIGKILL
            } else {
                Signal::SIGTERM
            };
            let _ = kill(pid, signal);
            let until = std::time::Instant::now() + Duration::from_secs(timeout);
            while !gone(()) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !gone(()) {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
        println!("{}", c.id);
    }
    Ok(0)
}

fn logs(cx: &Cx, args: &[String]) -> Result<i32> {
    let p = parse(args, LOGS, false)?;
    cx.runtime()?;
    let [id] = p.positional.as_slice() else {
        bail!("ID cannot be empty");
    };
    let all = containers(cx.sim)?;
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

    #[test]
    fn labels_split_like_crictl() {
        assert!(parse_labels(&["a=b"]).is_ok());
        assert!(parse_labels(&["a=b=c"]).is_err());
        assert!(parse_labels(&["a"]).is_err());
        assert_eq!(parse_labels(&["a="]).unwrap()["a"], "");
    }

    #[test]
    fn endpoints_parse_like_cri_client() {
        assert_eq!(
            socket_path("unix:///run/containerd/containerd.sock").unwrap(),
            "/run/containerd/containerd.sock"
        );
        assert_eq!(socket_path("/run/x.sock").unwrap(), "/run/x.sock");
        assert_eq!(
            socket_path("tcp://127.0.0.1:1").unwrap_err(),
            "only support unix socket endpoint"
        );
        assert_eq!(
            socket_path("npipe:////./pipe/x").unwrap_err(),
            "protocol \"npipe\" not supported"
        );
        assert!(same_socket(
            "/var/run/cri-dockerd.sock",
            "/run/cri-dockerd.sock"
        ));
    }

    #[test]
    fn logrus_quoting() {
        let l = Logrus { tty: false };
        let line = l.line(Level::Fatal, "a \"b\"");
        assert!(
            line.ends_with(" level=fatal msg=\"a \\\"b\\\"\"\n"),
            "{line}"
        );
        assert!(l
            .line(Level::Warning, "plain")
            .ends_with("level=warning msg=plain\n"));
        assert_eq!(
            Logrus { tty: true }.line(Level::Error, "x"),
            "ERRO[0000] x\n"
        );
    }

    #[test]
    fn protojson_layout() {
        let v = Pj::O(vec![
            ("items", Pj::A(vec![])),
            ("m", Pj::M(BTreeMap::new())),
            ("o", Pj::O(vec![("a", Pj::N(0)), ("b", Pj::s("x"))])),
        ]);
        assert_eq!(
            v.json(),
            "{\n  \"items\": [],\n  \"m\": {},\n  \"o\": {\n    \"a\": 0,\n    \"b\": \"x\"\n  }\n}\n"
        );
    }

    #[test]
    fn tabwriter_widths() {
        let t = table(&[
            vec!["A".into(), "BB".into(), "C".into()],
            vec!["x".repeat(25), "y".into(), "z".into()],
        ]);
        let first = t.lines().next().unwrap();
        assert_eq!(first, format!("{:<28}{:<20}C", "A", "BB"));
    }
}
