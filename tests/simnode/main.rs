//! nvke-simnode: the simulated control-plane node for the scenario tests
//! (see README.md beside this file).
//!
//! A multi-call binary. Called as `crictl` or `kubeadm` (a symlink
//! `<sim>/bin/crictl` or `<sim>/bin/kubeadm`), it finds its simulation at
//! `dirname(argv[0])/../sim.json`. Called as `nvke-simnode`, the first
//! argument names the stand-in:
//!
//! ```text
//! nvke-simnode kubelet --sim DIR
//! nvke-simnode apiserver --root R --port P --etcd-port E
//! nvke-simnode etcd --root R --port P
//! nvke-simnode etcd --root R --listen-client-urls URLS [--advertise-client-urls URLS] [--initial-advertise-peer-urls URLS] [--listen-peer-urls URLS]
//! nvke-simnode crictl [--sim DIR] ARGS...
//! nvke-simnode kubeadm [--sim DIR] ARGS...
//! ```
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
// They also make the system calls the runbook makes, to plant and provoke
// (signals, pre_exec, raw fds): unsafe as the tests need it.
#![allow(unsafe_code)]
// A command-line tool of its own (crictl, kubeadm, etcdctl stand-ins): it prints.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

mod crictl;
mod etcdctl;
mod kubeadm;
mod kubelet;
mod regex;
mod servers;
mod sim;
mod state;
mod tls;

use sim::Sim;
use std::process::ExitCode;

const USAGE: &str = "usage: nvke-simnode kubelet --sim DIR
       nvke-simnode apiserver --root R --port P [--etcd-port E]
       nvke-simnode etcd --root R --port P
       nvke-simnode crictl [--sim DIR] ARGS...
       nvke-simnode kubeadm [--sim DIR] ARGS...
   or: call it through a symlink named crictl or kubeadm in <sim>/bin/";

fn code(c: i32) -> ExitCode {
    ExitCode::from(u8::try_from(c).unwrap_or(1))
}

fn result(name: &str, r: anyhow::Result<()>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvke-simnode {name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// As a container's PID 1 (the containers tier), the kernel drops a
/// signal whose disposition is the default: the real kube-apiserver, etcd
/// and pause handle SIGTERM and SIGINT and exit 0, so the stand-ins do
/// too there. Elsewhere they keep the default disposition (killed by the
/// signal), which the simulated kubelet and its tests observe.
fn exit_on_sigterm_as_pid1() {
    extern "C" fn bye(_: nix::libc::c_int) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { nix::libc::_exit(0) }
    }
    if std::process::id() != 1 {
        return;
    }
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(SigHandler::Handler(bye), SaFlags::empty(), SigSet::empty());
    for sig in [Signal::SIGTERM, Signal::SIGINT] {
        // SAFETY: the handler only calls _exit.
        let _ = unsafe { sigaction(sig, &act) };
    }
}

/// Removes `flag` from `args`; whether it was there.
fn take_flag(args: &mut Vec<String>, flag: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != flag);
    args.len() != before
}

/// Removes `flag VALUE` from `args`; the value.
fn take_value(args: &mut Vec<String>, flag: &str) -> Option<String> {
    let i = args.iter().position(|a| a == flag)?;
    let v = args.get(i + 1).cloned();
    args.drain(i..(i + 2).min(args.len()));
    v
}

/// For `nvke-simnode crictl|kubeadm`: `--sim DIR` first, else
/// `$NVKE_SIM_DIR`, else `dirname(argv[0])/..`.
fn multicall_sim(argv0: &str, rest: &[String]) -> (Option<Sim>, Vec<String>) {
    match rest {
        [flag, dir, tail @ ..] if flag == "--sim" => (Some(Sim::from_arg(dir)), tail.to_vec()),
        [flag, tail @ ..] if flag.starts_with("--sim=") => {
            (Some(Sim::from_arg(&flag["--sim=".len()..])), tail.to_vec())
        }
        _ => match std::env::var("NVKE_SIM_DIR") {
            Ok(dir) if !dir.is_empty() => (Some(Sim::from_arg(&dir)), rest.to_vec()),
            _ => (Sim::from_argv0(argv0).ok(), rest.to_vec()),
        },
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let argv0 = args.first().cloned().unwrap_or_default();
    let base = argv0.rsplit('/').next().unwrap_or("");
    match base {
        "crictl" => return code(crictl::main(Sim::from_argv0(&argv0).ok(), &args[1..])),
        "kubeadm" => return code(kubeadm::main(Sim::from_argv0(&argv0).ok(), &args[1..])),
        _ => {}
    }
    let Some(sub) = args.get(1) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut rest: Vec<String> = args[2..].to_vec();
    if matches!(sub.as_str(), "apiserver" | "etcd" | "pause" | "healthz") {
        // The kubelet's process knobs (sim.json `ignoreSigterm`,
        // `listenDelayMs`), taken off before the stand-in parses its flags.
        let ignore = take_flag(&mut rest, "--ignore-sigterm");
        let delay = take_value(&mut rest, "--listen-delay-ms").and_then(|v| v.parse::<u64>().ok());
        // sim.json `crashAfterMs`: the process exits 1 this long after it
        // started (a crash the kubelet restarts with a back-off).
        if let Some(ms) =
            take_value(&mut rest, "--exit-after-ms").and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                eprintln!("exiting 1 after {ms} ms (sim.json crashAfterMs)");
                std::process::exit(1);
            });
        }
        if ignore {
            use nix::sys::signal::{signal, SigHandler, Signal};
            // SAFETY: SIG_IGN installs no handler code.
            let _ = unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) };
        } else {
            exit_on_sigterm_as_pid1();
        }
        if let Some(ms) = delay {
            // Not listening yet: its container is RUNNING meanwhile.
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }
    let rest = &rest[..];
    match sub.as_str() {
        "kubelet" => result("kubelet", kubelet::main(rest)),
        "apiserver" => result("apiserver", servers::apiserver_main(rest)),
        "etcd" => result("etcd", servers::etcd_main(rest)),
        "healthz" => result("healthz", servers::healthz_main(rest)),
        // The process of a container that serves nothing here
        // (kube-controller-manager, kube-scheduler): it runs until a
        // signal, as a real container's process does (SIGTERM's default
        // action ends it).
        "pause" => loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        "crictl" => {
            let (sim, rest) = multicall_sim(&argv0, rest);
            code(crictl::main(sim, &rest))
        }
        "kubeadm" => {
            let (sim, rest) = multicall_sim(&argv0, rest);
            code(kubeadm::main(sim, &rest))
        }
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("nvke-simnode: unknown stand-in {other:?}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
