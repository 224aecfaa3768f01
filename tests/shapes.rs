//! The node shapes real kubeadm clusters have (SPEC 12, v1.3), on the
//! simulated node (tests/simnode): for each, the operator view, the check
//! and a renewal, with the verdict and the exit code SPEC gives.
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use serde_json::json;
use std::path::Path;
use support::kubeadm_manifests::ControlPlane;
use support::node::*;

/// The runbook's text output (the JSON default of [`Node::run`] replaced).
fn run_text(node: &Node, args: &[&str]) -> (i32, String) {
    let mut a = node.runbook_args(args);
    let i = a.iter().position(|x| x == "--output").unwrap();
    a[i + 1] = "text".into();
    let out = std::process::Command::new(RUNBOOK)
        .args(a)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// The kubeadm-shaped generator (tests/support/kubeadm_manifests.rs)
/// given the fixture's node (cp-1, 10.0.0.11, kubeadm's ports 6443, 2379,
/// 2380, 10257 and 10259, binds on 127.0.0.1) writes the fixture's four
/// manifests byte for byte, as kubeadm v1.31 wrote them: every simulated
/// node starts from the same text, only its description differs.
#[test]
fn the_generator_writes_the_fixture_manifests() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nodes");
    for variant in ["rsa", "ecdsa"] {
        let dir = fixture.join(variant).join(MANIFESTS);
        let generated = ControlPlane::fixture().manifests();
        assert_eq!(generated.len(), 4);
        for (name, text) in generated {
            let want = std::fs::read_to_string(dir.join(name)).unwrap();
            assert!(
                text == want,
                "{variant}/{name} differs from the fixture:\n{}",
                first_difference(&want, &text)
            );
        }
    }
}

/// The first line where `want` and `got` differ, with both.
fn first_difference(want: &str, got: &str) -> String {
    let (mut w, mut g) = (want.lines(), got.lines());
    for n in 1.. {
        match (w.next(), g.next()) {
            (None, None) => return "(same lines; line endings differ)".into(),
            (a, b) if a == b => continue,
            (a, b) => return format!("line {n}: fixture {a:?}, generated {b:?}"),
        }
    }
    unreachable!()
}

const EXTERNAL: &str = "external etcd: this runbook renews stacked-etcd nodes only";

/// External etcd (SPEC 12): no `etcd.yaml`, and kube-apiserver's
/// `--etcd-servers` names another machine. Every mode says so as its one
/// verdict and exits 1 (phase `topology` for the renewal), never ACTION
/// NEEDED for an etcd pod that never existed; nothing changes.
#[test]
fn external_etcd_is_one_verdict_exit_1_in_every_mode() {
    // kubeadm with `etcd.external.endpoints`: no etcd.yaml, the
    // apiserver's `--etcd-servers` those endpoints.
    let mut node = Node::prepare_with("rsa", json!({}), |cp| {
        cp.external_etcd = Some(vec![
            "https://192.0.2.10:2379".into(),
            "https://[2001:db8::10]:2379".into(),
        ]);
    });
    node.start_kubelet();
    node.wait_for("the three pods running", 20, |n| {
        COMPONENTS[1..].iter().all(|c| n.running_id(c).is_some())
    });
    assert!(!node.manifest("etcd").exists());
    let api = node.manifest("kube-apiserver");
    assert!(std::fs::read_to_string(&api)
        .unwrap()
        .contains("--etcd-servers=https://192.0.2.10:2379,https://[2001:db8::10]:2379\n"));
    let pki_before = support::tree::snapshot(&node.root.join("etc/kubernetes/pki"), true);

    let (code, view, stderr) = node.run(&["--status-only"]);
    assert_eq!(code, 1, "{view:#}\n{stderr}");
    assert_eq!(view["severity"], "not_clean", "{view:#}");
    let reasons = view["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "one verdict: {view:#}");
    assert!(
        reasons[0].as_str().unwrap().starts_with(EXTERNAL),
        "{view:#}"
    );
    let (code, text) = run_text(&node, &["--status-only"]);
    assert_eq!(code, 1);
    assert!(
        text.starts_with(&format!("NODE: NOT CLEAN: {EXTERNAL}")),
        "{text}"
    );
    assert!(!text.contains("ACTION NEEDED"), "{text}");

    let (code, check, stderr) = node.run(&["--check"]);
    assert_eq!(code, 1, "{check:#}\n{stderr}");
    assert_eq!(check["decision"], "failed", "{check:#}");
    assert_eq!(check["reasons"].as_array().unwrap().len(), 1, "{check:#}");
    assert!(
        check["message"].as_str().unwrap().contains(EXTERNAL),
        "{check:#}"
    );

    let (code, renew, stderr) = node.run(&["--operation-id", "op-external", "--force"]);
    assert_eq!(code, 1, "{renew:#}\n{stderr}");
    assert_eq!(renew["phase"], "topology", "{renew:#}");
    assert!(
        renew["message"].as_str().unwrap().starts_with(EXTERNAL),
        "{renew:#}"
    );
    assert_eq!(renew["restarts"], json!([]), "{renew:#}");
    // Its replay exits 1 too (SPEC 7: the code its outcome had).
    let (code, replay, stderr) = node.run(&["--operation-id", "op-external", "--force"]);
    assert_eq!(code, 1, "{replay:#}\n{stderr}");
    assert!(
        replay["message"].as_str().unwrap().starts_with(EXTERNAL),
        "{replay:#}"
    );
    assert_eq!(
        support::tree::snapshot(&node.root.join("etc/kubernetes/pki"), true),
        pki_before,
        "nothing renewed"
    );
    assert!(!std::fs::read_to_string(&api).unwrap().is_empty());
}

/// Any other missing etcd manifest stays a pod down (SPEC 7: exit 4): an
/// apiserver whose `--etcd-servers` is this host's loopback has a stacked
/// etcd whose manifest is gone.
#[test]
fn a_stacked_etcd_whose_manifest_is_gone_stays_action_needed() {
    let node = Node::new("rsa", json!({}));
    std::fs::remove_file(node.manifest("etcd")).unwrap();
    let (code, view, stderr) = node.run(&["--status-only"]);
    assert_eq!(code, 4, "{view:#}\n{stderr}");
    assert_eq!(view["severity"], "action_needed", "{view:#}");
    let (code, renew, stderr) = node.run(&["--operation-id", "op-stacked", "--force"]);
    assert_eq!(code, 4, "{renew:#}\n{stderr}");
    assert_eq!(renew["phase"], "topology", "{renew:#}");
}

/// A control plane on IPv6 loopback (SPEC 12, v1.3; kubeadm on an IPv6
/// single-stack node, described to the generator: advertise address
/// `::1`, the only IPv6 address of this host's network): etcd's client,
/// peer and metrics URLs on `[::1]` and its probes on `::1`, as kubeadm
/// writes them for the family, the apiserver's `--etcd-servers` `[::1]`,
/// and the three others bound to `::1` (`--bind-address`; the stand-ins
/// listen there only). The runbook asks each where its manifest says (never a guessed
/// `127.0.0.1` or `2379`): the view is clean, the check passes, a renewal
/// restarts all four and proves kube-apiserver and etcd serve the renewed
/// certificates there.
#[test]
fn a_control_plane_on_ipv6_loopback_is_asked_there_and_renewed() {
    let v6 = |a: &str| a.parse::<std::net::IpAddr>().unwrap();
    let mut node = Node::prepare_with("rsa", json!({}), |cp| {
        cp.advertise = v6("::1");
        cp.api_bind = Some(v6("::1"));
        cp.kcm_bind = v6("::1");
        cp.sched_bind = v6("::1");
    });
    let port = node.etcd_client_port();
    node.start_kubelet();
    node.wait_all_running();

    let (code, view, stderr) = node.run(&["--status-only"]);
    assert_eq!(code, 0, "{view:#}\n{stderr}");
    // Asked on [::1]: healthy, and its server.crt served there is current
    // (asked on 127.0.0.1 it would be refused: not checked, exit 1).
    let etcd_live = view["live"]["pods"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "etcd"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(etcd_live["health"], "healthy", "{view:#}");
    assert_eq!(etcd_live["served"][0]["port"], port, "{view:#}");
    assert_eq!(etcd_live["served"][0]["served"], "current", "{view:#}");
    healthy_checked_renewed(&node, &view, "op-ipv6");
}

/// A dual-stack node (SPEC 12, v1.3 row 28; kubeadm with an IPv6
/// advertise address and both families' service and pod ranges, described
/// to the generator): kube-apiserver bound to `::` (every address of both
/// families) and probed on its IPv6 advertise address (loopback here),
/// etcd listening on `[::1]` and `127.0.0.1`, the controller manager and
/// the scheduler on `127.0.0.1`. Each is asked in its own
/// family, where its manifest says: clean, checked, renewed.
#[test]
fn a_dual_stack_node_is_asked_in_each_family_and_renewed() {
    let ip = |a: &str| a.parse::<std::net::IpAddr>().unwrap();
    let mut node = Node::prepare_with("rsa", json!({}), |cp| {
        cp.advertise = ip("::1");
        // Bound to `::`: written quoted (a plain YAML scalar cannot end
        // in `:`), and probed on the advertise address.
        cp.api_bind = Some(ip("::"));
        // etcd's client URLs in both families (an extra argument).
        cp.etcd_listen_client = Some(vec![ip("::1"), ip("127.0.0.1")]);
        cp.service_subnet = "fd00:10:96::/112,10.96.0.0/16".into();
        cp.pod_subnet = "fd00:10:244::/56,10.244.0.0/16".into();
    });
    let a = std::fs::read_to_string(node.manifest("kube-apiserver")).unwrap();
    assert!(a.contains("    - '--bind-address=::'\n"), "{a}");
    let e = std::fs::read_to_string(node.manifest("etcd")).unwrap();
    let port = node.etcd_client_port();
    assert!(
        e.contains(&format!(
            "--listen-client-urls=https://[::1]:{port},https://127.0.0.1:{port}\n"
        )),
        "{e}"
    );
    node.start_kubelet();
    node.wait_all_running();
    let (code, view, stderr) = node.run(&["--status-only"]);
    assert_eq!(code, 0, "{view:#}\n{stderr}");
    let (code, check, stderr) = node.run(&["--check", "--force"]);
    assert_eq!(code, 0, "{check:#}\n{stderr}");
    let (code, renew, stderr) = node.run(&["--operation-id", "op-dual", "--force"]);
    assert_eq!(code, 0, "{renew:#}\n{stderr}");
    assert_eq!(renew["outcome"], "renewed", "{renew:#}");
    assert_eq!(renew["restarts"].as_array().unwrap().len(), 4, "{renew:#}");
}

/// A serving file kubeadm does not manage (SPEC 12, v1.3 row 27): the
/// apiserver's `--tls-cert-file` names a certificate outside kubeadm's
/// leaves. The view and the check say `kube-apiserver serves <file>,
/// which kubeadm does not renew` as a warning (clean otherwise), and a
/// renewal compares what the port serves with that file, never asking it
/// to change: renewed, where it used to fail its postflight forever.
#[test]
fn a_serving_file_kubeadm_does_not_manage_is_a_warning_never_a_failure() {
    // kubeadm with the apiserver's `tls-cert-file` and
    // `tls-private-key-file` as extra arguments.
    let mut node = Node::prepare_with("rsa", json!({}), |cp| {
        cp.api_serving = Some((
            "/etc/kubernetes/custom/apiserver.pem".into(),
            "/etc/kubernetes/custom/apiserver-key.pem".into(),
        ));
    });
    let custom = node.root.join("etc/kubernetes/custom");
    std::fs::create_dir_all(&custom).unwrap();
    let pki = node.root.join("etc/kubernetes/pki");
    std::fs::copy(pki.join("apiserver.crt"), custom.join("apiserver.pem")).unwrap();
    std::fs::copy(pki.join("apiserver.key"), custom.join("apiserver-key.pem")).unwrap();
    node.start_kubelet();
    node.wait_all_running();
    let warning =
        "kube-apiserver serves /etc/kubernetes/custom/apiserver.pem, which kubeadm does not renew";

    let (code, view, stderr) = node.run(&["--status-only"]);
    assert_eq!(code, 0, "{view:#}\n{stderr}");
    assert!(
        view["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == warning),
        "{:#}",
        view["warnings"]
    );
    let (code, check, stderr) = node.run(&["--check", "--force"]);
    assert_eq!(code, 0, "{check:#}\n{stderr}");
    assert!(
        check["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == warning),
        "{:#}",
        check["warnings"]
    );
    let before = std::fs::read(custom.join("apiserver.pem")).unwrap();
    let (code, renew, stderr) = node.run(&["--operation-id", "op-custom", "--force"]);
    assert_eq!(code, 0, "{renew:#}\n{stderr}");
    assert_eq!(renew["outcome"], "renewed", "{renew:#}");
    assert!(stderr.contains(warning), "said in the log: {stderr}");
    assert_eq!(std::fs::read(custom.join("apiserver.pem")).unwrap(), before);
}

/// SPEC 12 (v1.3), "A symlinked `pki/`": kubespray's `pki -> ssl`. Check,
/// the operator view and a forced renewal all go through the link (resolved
/// once, walked no-follow); kubeadm renews the files under `ssl/`, the
/// backup holds them, and the link is still the same link afterwards. (A
/// relative link: the stand-in TLS servers follow links as the host sees
/// them, so an absolute one would send them outside the simulated root;
/// the runbook's side of an absolute link is in src/node/fsx/pkilink.rs.)
#[test]
fn a_pki_linked_to_ssl_is_checked_viewed_and_renewed_through_the_link() {
    renewed_through_the_link("ssl", "ssl (/etc/kubernetes/ssl)");
}

fn renewed_through_the_link(target: &str, shown: &str) {
    // kubespray's manifests name the files under ssl/ (kubeadm's
    // certificatesDir: every flag and mount): the same files kubeadm
    // renews, never "not renewed by kubeadm".
    let mut node = Node::prepare_with("rsa", json!({}), |cp| {
        cp.certificates_dir = "/etc/kubernetes/ssl".into();
    });
    let kube = node.root.join("etc/kubernetes");
    std::fs::rename(kube.join("pki"), kube.join("ssl")).unwrap();
    std::os::unix::fs::symlink(target, kube.join("pki")).unwrap();
    node.start_kubelet();
    node.wait_all_running();
    let is_the_link = || {
        assert!(std::fs::symlink_metadata(kube.join("pki"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_link(kube.join("pki")).unwrap(),
            Path::new(target)
        );
    };

    let (code, c, e) = node.run(&["--check"]);
    assert_eq!(code, 0, "{c:#}\n{e}");
    let (code, s, e) = node.run(&["--status-only"]);
    assert_eq!(code, 0, "{s:#}\n{e}");
    assert!(!s.to_string().contains("is a symlink"), "{s:#}");
    assert!(!s.to_string().contains("does not renew"), "{s:#}");
    assert!(!c.to_string().contains("does not renew"), "{c:#}");

    let leaf = |rel: &str| std::fs::read(kube.join("ssl").join(rel)).unwrap();
    let cas = ["ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"].map(leaf);
    let before = [leaf("apiserver.crt"), leaf("etcd/peer.crt")];
    let (code, v, e) = node.run(&["--operation-id", "op-ssl", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str(), v["phase"].as_str()),
        (0, Some("renewed"), Some("done")),
        "{v:#}\n{e}"
    );
    assert_eq!(restarted(&v), COMPONENTS);
    assert!(
        node.kubeadm_calls().contains("certs renew"),
        "{}",
        node.kubeadm_calls()
    );
    for c in v["certificates"].as_array().unwrap() {
        if !c["notAfterAfter"].is_null() {
            assert!(c["daysLeftAfter"].as_i64().unwrap() > 300, "{c}");
        }
    }
    // The files under ssl/ were renewed in place; the CAs never changed.
    assert_ne!(leaf("apiserver.crt"), before[0]);
    assert_ne!(leaf("etcd/peer.crt"), before[1]);
    assert_eq!(
        ["ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"].map(leaf),
        cas
    );
    is_the_link();
    node.assert_all_active();
    // The backup holds the target's files (a directory, not a link).
    let backup = node.state().join("backup/op-ssl/pki");
    assert!(backup.is_dir() && !backup.is_symlink());
    assert_eq!(
        std::fs::read(backup.join("apiserver.crt")).unwrap(),
        before[0]
    );
    // Said once, in the operation's log.
    let log = std::fs::read_to_string(node.state().join("log/op-ssl.log")).unwrap();
    assert!(
        log.contains(&format!("/etc/kubernetes/pki is a symlink to {shown}: the PKI is read and written in /etc/kubernetes/ssl (no-follow)")),
        "{log}"
    );

    // After it, the same views are clean.
    let (code, c, e) = node.run(&["--check"]);
    assert_eq!(code, 0, "{c:#}\n{e}");
    is_the_link();
}

/// SPEC 12 (v1.3): a `pki` link that points outside `/etc/kubernetes` is
/// refused, naming the link, its target and why: the renewal exits 1,
/// kubeadm never runs and nothing under `/etc/kubernetes` changes.
#[test]
fn a_pki_linked_outside_etc_kubernetes_is_refused_and_nothing_changes() {
    let mut node = Node::prepare("rsa", json!({}));
    let kube = node.root.join("etc/kubernetes");
    let srv = node.root.join("srv");
    std::fs::create_dir_all(&srv).unwrap();
    std::fs::rename(kube.join("pki"), srv.join("pki")).unwrap();
    std::os::unix::fs::symlink("../../srv/pki", kube.join("pki")).unwrap();
    node.start_kubelet();
    node.wait_all_running();
    let before = (
        support::tree::snapshot(&kube, true),
        support::tree::snapshot(&srv, true),
    );
    let why = "/etc/kubernetes/pki is a symlink to ../../srv/pki (/srv/pki), outside /etc/kubernetes: refused";

    let (code, v, e) = node.run(&["--operation-id", "op-out", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str(), v["phase"].as_str()),
        (1, Some("failed"), Some("ca-check")),
        "{v:#}\n{e}"
    );
    assert!(v.to_string().contains(why), "{v:#}\n{e}");
    assert!(
        !node.kubeadm_calls().contains("certs renew"),
        "{}",
        node.kubeadm_calls()
    );
    let (code, c, _) = node.run(&["--check"]);
    assert_eq!(code, 1, "{c:#}");
    assert!(c.to_string().contains(why), "{c:#}");
    let (code, s, _) = node.run(&["--status-only"]);
    assert_eq!(code, 1, "{s:#}");
    assert!(s.to_string().contains(why), "{s:#}");
    node.assert_all_active();
    let after = (
        support::tree::snapshot(&kube, true),
        support::tree::snapshot(&srv, true),
    );
    assert_eq!(support::tree::diff(&before.0, &after.0), Vec::new());
    assert_eq!(support::tree::diff(&before.1, &after.1), Vec::new());
}

/// Probes the runbook cannot ask without a guess (SPEC 12, v1.3; issue 42
/// "Bad input"): kube-apiserver's probe over plain HTTP (its client
/// certificate never goes in clear), kube-controller-manager's probe on a
/// DNS name, kube-scheduler's on a named port its container does not
/// declare. Each is `not checked`, naming what the manifest says (exit 1),
/// never asked elsewhere; a renewal's gate before any change waits on them
/// and fails (exit 1).
#[test]
fn probes_that_cannot_be_asked_without_a_guess_are_named_not_checked() {
    let mut node = Node::prepare("rsa", json!({}));
    let edit = |c: &str, from: &str, to: &str| {
        let p = node.manifest(c);
        let m = std::fs::read_to_string(&p).unwrap();
        assert!(m.contains(from), "{c}: {from}\n{m}");
        std::fs::write(&p, m.replace(from, to)).unwrap();
    };
    edit(
        "kube-apiserver",
        "        scheme: HTTPS\n",
        "        scheme: HTTP\n",
    );
    edit(
        "kube-controller-manager",
        "        host: 127.0.0.1\n",
        "        host: cp-1.example\n",
    );
    let sched = std::fs::read_to_string(node.manifest("kube-scheduler")).unwrap();
    let port = sched
        .lines()
        .find_map(|l| l.trim().strip_prefix("port: "))
        .unwrap()
        .to_string();
    edit(
        "kube-scheduler",
        &format!("        port: {port}\n"),
        "        port: probe-port\n",
    );
    node.start_kubelet();
    node.wait_all_running();
    let (code, view, stderr) = node.run(&["--status-only"]);
    assert_eq!(code, 1, "{view:#}\n{stderr}");
    let health = |c: &str| {
        view["live"]["pods"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == c))
            .map(|p| p["health"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    };
    let api = health("kube-apiserver");
    assert!(
        api.starts_with("not checked: kube-apiserver readinessProbe asks plain HTTP on port ")
            && api.ends_with(", which serves TLS only"),
        "{api}"
    );
    let kcm = health("kube-controller-manager");
    assert!(
        kcm.starts_with("not checked: ") && kcm.contains("cp-1.example"),
        "{kcm}"
    );
    let sched = health("kube-scheduler");
    assert!(
        sched.starts_with("not checked: ") && sched.contains("probe-port"),
        "{sched}"
    );
    let (code, renew, stderr) = node.run(&[
        "--operation-id",
        "op-unaskable",
        "--force",
        "--health-timeout",
        "2",
    ]);
    // The gate before anything changes: failed, nothing touched.
    assert_eq!(code, 1, "{renew:#}\n{stderr}");
    assert_eq!(renew["phase"], "health", "{renew:#}");
    assert!(
        renew["restarts"].as_array().is_none_or(Vec::is_empty),
        "{renew:#}"
    );
}

/// Components bound to the node's address (SPEC 12, v1.3; issue 42's
/// "bound to the node's address"), in a network namespace whose loopback
/// carries the node's address 10.0.0.11 (root only; skipped otherwise):
/// kube-apiserver, kube-controller-manager and kube-scheduler with
/// `--bind-address=10.0.0.11` and their probes there (as kubeadm writes
/// them), etcd's client URL on 10.0.0.11 only. Nothing listens on
/// loopback: a runbook that asked `127.0.0.1` would find every port
/// refused. The view is clean, the check passes, a renewal restarts all
/// four and proves what they serve.
#[test]
fn components_bound_to_the_node_address_are_asked_there_and_renewed() {
    let Some(ns) = support::netns::Named::with_addresses(&["10.0.0.11/32"]) else {
        eprintln!("skipped: a network namespace needs root");
        return;
    };
    // The fixture's advertise address, with kubeadm's extra arguments
    // binding the three others there and etcd's client URL there only.
    let mut node = Node::prepare_with("rsa", json!({}), |cp| {
        let on_node: std::net::IpAddr = "10.0.0.11".parse().unwrap();
        cp.advertise = on_node;
        cp.api_bind = Some(on_node);
        cp.kcm_bind = on_node;
        cp.sched_bind = on_node;
        cp.etcd_listen_client = Some(vec![on_node]);
        cp.etcd_servers = Some(cp.etcd_client_url(on_node));
    });
    node.netns = Some(ns);
    let e = std::fs::read_to_string(node.manifest("etcd")).unwrap();
    assert!(!e.contains("https://127.0.0.1:"), "{e}");
    node.start_kubelet();
    node.wait_all_running();
    let (code, view, stderr) = node.run(&["--status-only"]);
    assert_eq!(code, 0, "{view:#}\n{stderr}");
    healthy_checked_renewed(&node, &view, "op-node-address");
}

/// All four healthy in `view`; the check passes; a forced renewal `op`
/// renews and restarts all four.
fn healthy_checked_renewed(node: &Node, view: &serde_json::Value, op: &str) {
    for c in COMPONENTS {
        let pod = view["live"]["pods"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == c))
            .cloned()
            .unwrap_or_default();
        assert_eq!(pod["health"], "healthy", "{c}: {view:#}");
    }
    let (code, check, stderr) = node.run(&["--check", "--force"]);
    assert_eq!(code, 0, "{check:#}\n{stderr}");
    let (code, renew, stderr) = node.run(&["--operation-id", op, "--force"]);
    assert_eq!(code, 0, "{renew:#}\n{stderr}");
    assert_eq!(renew["outcome"], "renewed", "{renew:#}");
    assert_eq!(renew["restarts"].as_array().unwrap().len(), 4, "{renew:#}");
}
