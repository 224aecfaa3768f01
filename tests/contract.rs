//! The embedded contract (`embedded/`): the committed JSON Schemas and
//! manifest template are what `src/contract/` generates, and what the binary
//! prints and writes (built from those types) reads back into them.
//!
//! Every JSON document below is deserialized into its type
//! (`deny_unknown_fields` everywhere the document is closed) and serialized
//! back, and the result must equal the input: the serde attributes read what
//! they write (null versus absent, renames, constants), and a document built
//! another way (the fencing check's receipt, a file an older binary wrote)
//! still fits. Sources:
//! - every JSON `stdout` of `tests/golden/` (check, status, fence, usage
//!   errors);
//! - the binary run on a copy of `fixtures/nodes/rsa` (version, help, check,
//!   status, usage errors, unchanged/failed/replayed/lock-timeout renewals,
//!   legacy-v1, fences) and the receipts and owner file those runs wrote;
//! - phase files and receipts rendered by `src/rules/phase.rs` / `src/rules/receipt.rs`;
//! - with `--features sim`: a real renewal, a resumed one and a refused one on
//!   the simulated node, and the phase file they leave.
//!
//! `SNAPSHOTS=overwrite cargo test --test contract` rewrites
//! `embedded/schema/*.schema.json` and `embedded/manifest.json`; read the
//! diff before committing it.

// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
// Skips and measurements are printed through the harness (captured unless --nocapture); the print lints bind src/.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use nvke_cert_runbook::contract::{self, schema, *};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::tree::copy_tree;

const RUNBOOK: &str = env!("CARGO_BIN_EXE_nvke-cert-runbook");
const NOW: &str = "2026-11-30T00:00:00Z";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn overwrite() -> bool {
    std::env::var("SNAPSHOTS").as_deref() == Ok("overwrite")
}

/// Deserialize strictly into `T`, serialize back, and require the same JSON.
fn conforms<T: DeserializeOwned + Serialize>(what: &str, v: &Value) -> Result<T, String> {
    let t: T = serde_json::from_value(v.clone())
        .map_err(|e| format!("{what}: does not match {}: {e}", std::any::type_name::<T>()))?;
    let back = serde_json::to_value(&t).map_err(|e| format!("{what}: serialize: {e}"))?;
    if &back != v {
        return Err(format!(
            "{what}: {} does not round-trip (a field the output lacks, or null vs absent):\n{}",
            std::any::type_name::<T>(),
            diff(v, &back)
        ));
    }
    Ok(t)
}

/// The paths where two JSON values differ.
fn diff(a: &Value, b: &Value) -> String {
    fn walk(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    walk(&format!("{path}.{k}"), x.get(k), y.get(k), out);
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(&format!("{path}[{i}]"), Some(p), Some(q), out);
                }
            }
            (x, y) if x != y => out.push(format!("  {path}: output {x:?}, type {y:?}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("$", Some(a), Some(b), &mut out);
    out.join("\n")
}

/// Which document a printed JSON object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Renew,
    Check,
    Status,
    Fence,
    UsageError,
    Version,
    Help,
}

/// The same rule as `Classify` in embedded/go.
fn classify(v: &Value) -> Result<Kind, String> {
    let mode = v.get("mode").and_then(Value::as_str);
    if v.get("phase").and_then(Value::as_str) == Some("arguments") {
        return Ok(Kind::UsageError);
    }
    match mode {
        Some("help") => Ok(Kind::Help),
        Some("version") => Ok(Kind::Version),
        Some("check") => Ok(Kind::Check),
        Some("status") if v.get("fence") == Some(&Value::Bool(true)) => Ok(Kind::Fence),
        Some("status") => Ok(Kind::Status),
        Some("renew") | Some("legacy-v1") => Ok(Kind::Renew),
        _ => Err(format!("unknown document: mode {mode:?}")),
    }
}

/// Check a printed document against its contract type and its committed schema.
fn check_document(what: &str, v: &Value) -> Result<Kind, String> {
    let kind = type_check(what, v)?;
    let errs = schema_errors(schema_name(kind), v);
    if !errs.is_empty() {
        return Err(format!(
            "{what}: embedded/schema/{}: {errs:#?}",
            schema::file_name(schema_name(kind))
        ));
    }
    Ok(kind)
}

/// Check a printed document against its contract type.
fn type_check(what: &str, v: &Value) -> Result<Kind, String> {
    let kind = classify(v).map_err(|e| format!("{what}: {e}"))?;
    match kind {
        Kind::Renew => {
            // The union parses it, as the variant its discriminators name
            // (the variant's own error is the readable one).
            let doc: RenewDocument = conforms(what, v)?;
            if v["replayed"] == json!(true) {
                conforms::<RenewReplay>(what, v)?;
                assert!(matches!(doc, RenewDocument::Replay(_)), "{what}");
            } else if v.get("etcd").is_some() {
                conforms::<RenewResult>(what, v)?;
                assert!(matches!(doc, RenewDocument::Result(_)), "{what}");
            } else {
                conforms::<RenewEarlyFailure>(what, v)?;
                assert!(matches!(doc, RenewDocument::EarlyFailure(_)), "{what}");
            }
        }
        Kind::Check => drop(conforms::<CheckDocument>(what, v)?),
        Kind::Status => drop(conforms::<StatusDocument>(what, v)?),
        Kind::Fence => drop(conforms::<FenceDocument>(what, v)?),
        Kind::UsageError => drop(conforms::<UsageErrorDocument>(what, v)?),
        Kind::Version => drop(conforms::<VersionDocument>(what, v)?),
        Kind::Help => drop(conforms::<HelpDocument>(what, v)?),
    }
    Ok(kind)
}

// ---------------------------------------------------------------------------
// The committed schemas accept what the contract types accept
//
// A small validator for the JSON Schema subset schemars emits here. It does
// not evaluate `pattern` or `format` (the contract types' own checks cover
// those: operation IDs, hex digests, timestamps, messages); any other
// keyword it does not know is an error, so nothing is skipped silently.

fn schema_file(name: &str) -> Value {
    let p = repo().join("embedded/schema").join(schema::file_name(name));
    serde_json::from_slice(&std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

fn schema_errors(name: &str, v: &Value) -> Vec<String> {
    let root = schema_file(name);
    let mut errs = Vec::new();
    validate(&root, &root, v, "$", &mut errs);
    errs
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        _ => false,
    }
}

fn validate(root: &Value, s: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
    let obj = match s {
        Value::Bool(true) => return,
        Value::Bool(false) => return errs.push(format!("{at}: no value allowed")),
        Value::Object(o) => o,
        _ => return errs.push(format!("{at}: bad schema {s}")),
    };
    let sub_ok = |sub: &Value| {
        let mut e = Vec::new();
        validate(root, sub, v, at, &mut e);
        e.is_empty()
    };
    for (k, kv) in obj {
        match k.as_str() {
            "$ref" => {
                let name = kv
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .unwrap_or_else(|| panic!("unsupported $ref {kv}"));
                validate(root, &root["$defs"][name], v, at, errs);
            }
            "type" => {
                let ok = match kv {
                    Value::String(t) => type_ok(t, v),
                    Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
                    _ => false,
                };
                if !ok {
                    errs.push(format!("{at}: {v} is not of type {kv}"));
                }
            }
            "enum" => {
                if !kv.as_array().unwrap().contains(v) {
                    errs.push(format!("{at}: {v} not in {kv}"));
                }
            }
            "const" => {
                if kv != v {
                    errs.push(format!("{at}: {v} is not {kv}"));
                }
            }
            "properties" => {
                if let Value::Object(o) = v {
                    for (p, ps) in kv.as_object().unwrap() {
                        if let Some(x) = o.get(p) {
                            validate(root, ps, x, &format!("{at}.{p}"), errs);
                        }
                    }
                }
            }
            "required" => {
                if let Value::Object(o) = v {
                    for r in kv.as_array().unwrap() {
                        if !o.contains_key(r.as_str().unwrap()) {
                            errs.push(format!("{at}: missing required {r}"));
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Value::Object(o) = v {
                    let props = obj.get("properties").and_then(Value::as_object);
                    for (p, x) in o {
                        if !props.is_some_and(|ps| ps.contains_key(p)) {
                            validate(root, kv, x, &format!("{at}.{p}"), errs);
                        }
                    }
                }
            }
            "items" => {
                if let Value::Array(a) = v {
                    for (i, x) in a.iter().enumerate() {
                        validate(root, kv, x, &format!("{at}[{i}]"), errs);
                    }
                }
            }
            "anyOf" => {
                if !kv.as_array().unwrap().iter().any(sub_ok) {
                    errs.push(format!("{at}: matches no anyOf branch"));
                }
            }
            "oneOf" => {
                let n = kv.as_array().unwrap().iter().filter(|x| sub_ok(x)).count();
                if n != 1 {
                    errs.push(format!("{at}: matches {n} oneOf branches"));
                }
            }
            "allOf" => {
                for x in kv.as_array().unwrap() {
                    validate(root, x, v, at, errs);
                }
            }
            "not" => {
                if sub_ok(kv) {
                    errs.push(format!("{at}: matches a `not` schema"));
                }
            }
            "if" => {
                let branch = if sub_ok(kv) {
                    obj.get("then")
                } else {
                    obj.get("else")
                };
                if let Some(b) = branch {
                    validate(root, b, v, at, errs);
                }
            }
            "minimum" | "maximum" => {
                if let (Some(x), Some(lim)) = (v.as_f64(), kv.as_f64()) {
                    if (k == "minimum" && x < lim) || (k == "maximum" && x > lim) {
                        errs.push(format!("{at}: {x} violates {k} {lim}"));
                    }
                }
            }
            "minLength" | "maxLength" => {
                if let (Some(x), Some(lim)) = (v.as_str(), kv.as_u64()) {
                    let n = x.chars().count() as u64;
                    if (k == "minLength" && n < lim) || (k == "maxLength" && n > lim) {
                        errs.push(format!("{at}: length {n} violates {k} {lim}"));
                    }
                }
            }
            "minItems" | "maxItems" => {
                if let (Some(x), Some(lim)) = (v.as_array(), kv.as_u64()) {
                    let n = x.len() as u64;
                    if (k == "minItems" && n < lim) || (k == "maxItems" && n > lim) {
                        errs.push(format!("{at}: {n} items violates {k} {lim}"));
                    }
                }
            }
            // Annotations, and what the contract types check instead.
            "then" | "else" | "$defs" | "$schema" | "$id" | "title" | "description"
            | "x-contractVersion" | "format" | "pattern" => {}
            other => panic!("the contract test's validator does not know the keyword {other:?}"),
        }
    }
}

/// The schema file a document kind is described by.
fn schema_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Renew => "renew",
        Kind::Check => "check",
        Kind::Status => "status",
        Kind::Fence => "fence",
        Kind::UsageError => "usage-error",
        Kind::Version => "version",
        Kind::Help => "help",
    }
}

/// A file's JSON against its contract type and its committed schema.
fn conforms_file<T: DeserializeOwned + Serialize>(name: &str, what: &str, v: &Value) -> T {
    let t = conforms::<T>(what, v).unwrap_or_else(|e| panic!("{e}"));
    let errs = schema_errors(name, v);
    assert!(errs.is_empty(), "{what}: schema {name}: {errs:#?}");
    t
}

// ---------------------------------------------------------------------------
// Committed files

fn check_file(path: &Path, want: &str, stale: &mut Vec<String>) {
    if overwrite() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    if have != want {
        stale.push(path.strip_prefix(repo()).unwrap().display().to_string());
    }
}

#[test]
fn committed_schemas_and_manifest_are_generated_from_the_types() {
    let dir = repo().join("embedded/schema");
    let mut stale = Vec::new();
    let all = schema::all();
    for (name, s) in &all {
        check_file(
            &dir.join(schema::file_name(name)),
            &schema::render(s),
            &mut stale,
        );
    }
    let want: Vec<String> = all.iter().map(|(n, _)| schema::file_name(n)).collect();
    for e in std::fs::read_dir(&dir).into_iter().flatten() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        if !want.contains(&name) {
            if overwrite() {
                std::fs::remove_file(dir.join(&name)).unwrap();
            } else {
                stale.push(format!("embedded/schema/{name} (no type generates it)"));
            }
        }
    }
    let mut manifest = serde_json::to_string_pretty(&schema::manifest_template()).unwrap();
    manifest.push('\n');
    check_file(
        &repo().join("embedded/manifest.json"),
        &manifest,
        &mut stale,
    );
    assert!(
        stale.is_empty(),
        "committed contract files differ from what src/contract/ generates: {stale:?}\n\
         run `SNAPSHOTS=overwrite cargo test --test contract` and review the diff"
    );
}

/// `StrictFile::OPTIONAL` cannot be derived (serde's `default` is not
/// seen at run time): it lists exactly the keys the schema does not
/// require (the `#[serde(default)]` fields), or the strict reader refuses
/// a file without a new key as `missing key ...`.
fn optional_keys_are_the_schemas<T>(name: &str, type_name: &str)
where
    T: nvke_cert_runbook::rules::strict::StrictFile + schemars::JsonSchema,
{
    let v = schema::schema_for::<T>(name).as_value().clone();
    let keys = |k: &str| -> std::collections::BTreeSet<String> {
        match &v[k] {
            Value::Object(m) => m.keys().cloned().collect(),
            Value::Array(a) => a
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
            _ => Default::default(),
        }
    };
    let not_required: std::collections::BTreeSet<String> = keys("properties")
        .difference(&keys("required"))
        .cloned()
        .collect();
    let listed: std::collections::BTreeSet<String> =
        T::OPTIONAL.iter().map(|k| k.to_string()).collect();
    assert_eq!(
        listed, not_required,
        "{type_name}: `impl StrictFile for {type_name}` (src/rules/files.rs) lists the optional \
         keys (left); the {name} schema does not require these (right): a #[serde(default)] \
         field's key goes in OPTIONAL"
    );
}

#[test]
fn the_strict_readers_optional_keys_are_the_schemas() {
    optional_keys_are_the_schemas::<Receipt>("receipt", "Receipt");
    optional_keys_are_the_schemas::<PhaseV2File>("phase-v2", "PhaseV2File");
}

#[test]
fn manifest_template_names_every_schema_and_mode() {
    let m = schema::manifest_template();
    let names: Vec<&str> = schema::all().iter().map(|(n, _)| *n).collect();
    for mode in m["modes"].as_array().unwrap() {
        let out = mode["output"].as_str().unwrap();
        assert!(names.contains(&out), "{mode}");
    }
    for f in m["files"].as_array().unwrap() {
        assert!(names.contains(&f["name"].as_str().unwrap()), "{f}");
    }
    let codes: Vec<u64> = m["exitCodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_u64().unwrap())
        .collect();
    assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        m["contractVersion"],
        nvke_cert_runbook::contract::version::CONTRACT_VERSION
    );
    assert_eq!(m["binary"]["sha256"], Value::Null);
}

// ---------------------------------------------------------------------------
// Golden outputs

/// Undo the golden normalization of owner records (`[masked]` pid, boot ID
/// and start time) so that they can be typed.
fn unmask(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("pid") == Some(&json!("[masked]"))
                || map.get("pid") == Some(&json!("[HOLDER]"))
            {
                map.insert("pid".into(), json!(4242));
            }
            if map.get("startedAt") == Some(&json!("[masked]")) {
                map.insert("startedAt".into(), json!("2026-11-29T23:50:00Z"));
            }
            map.values_mut().for_each(unmask);
        }
        Value::Array(a) => a.iter_mut().for_each(unmask),
        _ => {}
    }
}

#[test]
fn golden_outputs_match_the_contract_types() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/golden"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut failed = Vec::new();
    let mut kinds: BTreeMap<Kind, usize> = BTreeMap::new();
    for d in dirs {
        let Ok(stdout) = std::fs::read_to_string(d.join("stdout")) else {
            continue;
        };
        if !stdout.starts_with('{') {
            continue; // text output
        }
        let name = d.file_name().unwrap().to_string_lossy().to_string();
        let mut v: Value = match serde_json::from_str(&stdout) {
            Ok(v) => v,
            Err(e) => {
                failed.push(format!("{name}: not JSON: {e}"));
                continue;
            }
        };
        unmask(&mut v);
        match check_document(&name, &v) {
            Ok(k) => *kinds.entry(k).or_default() += 1,
            Err(e) => failed.push(e),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    for k in [Kind::Check, Kind::Status, Kind::Fence, Kind::UsageError] {
        assert!(kinds.get(&k).copied().unwrap_or(0) > 0, "no golden {k:?}");
    }
    eprintln!("golden documents checked: {kinds:?}");
}

// ---------------------------------------------------------------------------
// The binary on a fixture copy

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::Builder::new()
            .prefix("nvke-contract-")
            .tempdir()
            .unwrap();
        let root = tmp.path().join("root");
        copy_tree(&repo().join("fixtures/nodes/rsa"), &root);
        Fixture { _tmp: tmp, root }
    }

    fn state(&self) -> PathBuf {
        self.root.join("var/lib/nvke/k8s-cert-renewal")
    }

    /// Run with `--output json --root ROOT --now NOW` and tools that never
    /// work (no renewal here gets as far as running them successfully).
    fn run(&self, args: &[&str]) -> (i32, Value) {
        let mut all: Vec<String> = vec![
            "--output".into(),
            "json".into(),
            "--root".into(),
            self.root.display().to_string(),
            "--now".into(),
            NOW.into(),
        ];
        if !args.contains(&"--status-only") && !args.contains(&"--check") {
            all.extend(["--kubeadm", "/bin/false", "--crictl", "/bin/false"].map(String::from));
        }
        all.extend(args.iter().map(|s| s.to_string()));
        run_binary(&all)
    }
}

fn run_binary(args: &[String]) -> (i32, Value) {
    let out = support::netns::hermetic(&mut Command::new(RUNBOOK))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().count(),
        1,
        "{args:?}: one JSON line expected:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"));
    (out.status.code().unwrap_or(-1), v)
}

/// Check a run's document, its kind and exit code.
fn expect(what: &str, (code, v): (i32, Value), kind: Kind, want_code: i32) -> Value {
    match check_document(what, &v) {
        Ok(k) => assert_eq!(k, kind, "{what}: {v:#}"),
        Err(e) => panic!("{e}\n{v:#}"),
    }
    assert_eq!(code, want_code, "{what}: {v:#}");
    v
}

#[test]
fn binary_outputs_on_a_fixture_node_match_the_contract_types() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let v = expect(
        "--version",
        run_binary(&s(&["--version", "--output", "json"])),
        Kind::Version,
        0,
    );
    let version: VersionDocument = serde_json::from_value(v).unwrap();
    assert_eq!(
        version.contract_version,
        nvke_cert_runbook::contract::version::CONTRACT_VERSION
    );
    assert_eq!(
        version.runbook_version,
        nvke_cert_runbook::contract::version::RUNBOOK_VERSION
    );
    expect(
        "--help",
        run_binary(&s(&["--help", "--output", "json"])),
        Kind::Help,
        0,
    );
    expect(
        "clap usage error",
        run_binary(&s(&["--check", "--bogus", "--output=json"])),
        Kind::UsageError,
        2,
    );

    let f = Fixture::new();
    expect("--check", f.run(&["--check"]), Kind::Check, 0);
    // No runtime for the fixture: the live node is not checked, so never
    // clean (SPEC 6, 10): exit 1.
    expect("--status-only", f.run(&["--status-only"]), Kind::Status, 1);
    expect(
        "no mode",
        f.run(&["--threshold-days", "30"]),
        Kind::UsageError,
        2,
    );
    let gone = f.root.join("no-such-dir").display().to_string();
    let v = expect(
        "--root missing",
        run_binary(&s(&["--check", "--output", "json", "--root", &gone])),
        Kind::UsageError,
        1,
    );
    assert_eq!(v["outcome"], "failed");

    // Renewals: unchanged (nothing due), its replay, legacy-v1, a forced run
    // refused by the health gate, and one that cannot get the lock.
    let v = expect(
        "renew unchanged",
        f.run(&["--operation-id", "op-a"]),
        Kind::Renew,
        0,
    );
    assert_eq!(v["outcome"], "unchanged");
    let v = expect(
        "renew replay",
        f.run(&["--operation-id", "op-a"]),
        Kind::Renew,
        0,
    );
    assert_eq!(v["replayed"], true);
    expect("legacy-v1", f.run(&["--legacy-v1"]), Kind::Renew, 0);
    let v = expect(
        "renew refused by the health gate",
        f.run(&["--operation-id", "op-f", "--force", "--health-timeout", "1"]),
        Kind::Renew,
        1,
    );
    assert_eq!(v["phase"], "health");
    {
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(f.state().join("lock"))
            .unwrap();
        lock.lock().unwrap();
        let v = expect(
            "renew lock timeout",
            f.run(&["--operation-id", "op-l", "--lock-timeout", "0"]),
            Kind::Renew,
            3,
        );
        assert_eq!(v["phase"], "lock");
        let v = expect(
            "fence lock timeout",
            f.run(&[
                "--status-only",
                "--operation-id",
                "op-l",
                "--fence",
                "--lock-timeout",
                "0",
            ]),
            Kind::Fence,
            3,
        );
        assert_eq!(v["termination"], "unconfirmed");
        expect("--check, lock held", f.run(&["--check"]), Kind::Check, 1);
        lock.unlock().unwrap();
    }

    // Fences: one abandons, one confirms an existing receipt.
    let v = expect(
        "fence abandons",
        f.run(&["--status-only", "--operation-id", "op-b", "--fence"]),
        Kind::Fence,
        0,
    );
    assert_eq!(v["action"], "abandoned");
    let v = expect(
        "fence confirms",
        f.run(&["--status-only", "--operation-id", "op-a", "--fence"]),
        Kind::Fence,
        0,
    );
    assert_eq!(v["action"], "existing-receipt");
    let v = expect(
        "replay of an abandoned receipt",
        f.run(&["--operation-id", "op-b"]),
        Kind::Renew,
        5,
    );
    assert_eq!(v["outcome"], "abandoned");
    let v = expect(
        "status with an ID",
        f.run(&["--status-only", "--operation-id", "op-new"]),
        Kind::Status,
        // Not clean: no runtime for the fixture (as above).
        1,
    );
    assert_eq!(v["fencing"]["action"], "abandon");

    // The files those runs wrote.
    let mut receipts = 0;
    for e in std::fs::read_dir(f.state().join("completed")).unwrap() {
        let p = e.unwrap().path();
        let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        let r: Receipt = conforms_file("receipt", &p.display().to_string(), &v);
        assert_eq!(
            format!("{}.json", r.operation_id.as_str()),
            p.file_name().unwrap().to_string_lossy()
        );
        receipts += 1;
    }
    assert_eq!(receipts, 3, "op-a, op-f, op-b");
    let owner: Value =
        serde_json::from_slice(&std::fs::read(f.state().join("owner")).unwrap()).unwrap();
    conforms_file::<LockOwnerFile>("lock-owner", "state/owner", &owner);
}

// ---------------------------------------------------------------------------
// Files rendered by the binary's own writers

fn hex(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

#[test]
fn phase_files_and_receipts_round_trip_through_the_contract_types() {
    use nvke_cert_runbook::rules::component::Component as C;
    use nvke_cert_runbook::rules::files::Ended;
    use nvke_cert_runbook::rules::opid::OperationId as Id;
    use nvke_cert_runbook::rules::outcome::{ManifestLocation as L, Outcome as O, Phase as P};
    use nvke_cert_runbook::rules::phase::{self, PhaseFile, PhaseState as S, PhaseV2, ResumedFrom};
    use nvke_cert_runbook::rules::receipt::{self, Receipt as R};

    let cas: BTreeMap<String, String> = phase::CA_KEYS
        .iter()
        .zip(['a', 'b', 'c'])
        .map(|(k, c)| (k.to_string(), hex(c)))
        .collect();
    let base = PhaseV2 {
        format: contract::PhaseV2Format::V2,
        operation_id: Id::parse("cycle-7@cp-1").unwrap(),
        state: S::RestartPending,
        next_component: Some(C::KubeControllerManager),
        ca_sha256: (&cas).into(),
        force: true,
        threshold_days: 45,
        started_at: contract::Timestamp("2026-11-30T00:00:00Z".into()),
        updated_at: contract::Timestamp("2026-11-30T00:03:00.5Z".into()),
        resumed_from: None,
        recovery: false,
    };
    let variants = [
        base.clone(),
        PhaseV2 {
            state: S::Renewing,
            next_component: None,
            resumed_from: Some(ResumedFrom {
                operation_id: None,
                format: contract::PhaseFormat::LegacyFiveLine,
            }),
            ..base.clone()
        },
        PhaseV2 {
            state: S::Done,
            next_component: None,
            resumed_from: Some(ResumedFrom {
                operation_id: Some(Id::parse("cycle-6").unwrap()),
                format: contract::PhaseFormat::V2,
            }),
            ..base.clone()
        },
        // v1.2 (SPEC 11): a recovery's work says so.
        PhaseV2 {
            recovery: true,
            ..base.clone()
        },
    ];
    for p in &variants {
        phase::validate_v2(p).unwrap();
        let bytes = phase::render_v2(p);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let m: PhaseV2File = conforms_file("phase-v2", "render_v2", &v);
        // And what the type writes, the runbook reads back as the same file.
        let again = serde_json::to_vec_pretty(&m).unwrap();
        assert_eq!(
            phase::parse_phase_file(&again).unwrap(),
            PhaseFile::V2(p.clone())
        );
    }

    let manifests: BTreeMap<C, L> = C::ALL
        .into_iter()
        .zip([L::Active, L::Staged, L::Both, L::Missing])
        .collect();
    for (i, outcome) in O::ALL.into_iter().enumerate() {
        let phases = P::all();
        let r = R {
            // v1.2: a receipt lists the run's restarts (none: key absent).
            restarts: (0..i % 3)
                .map(|k| contract::Restart {
                    component: C::ALL[k],
                    old_container_id: format!("old{k}"),
                    new_container_id: format!("new{k}"),
                    stop_ms: 10,
                    healthy_ms: 300,
                    total_ms: 900,
                    api_unavailable_ms: (k != 1).then_some(200 * k as u64),
                })
                .collect(),
            // v1.2 (SPEC 11): a recovery's receipt says so, with the
            // health seen at its end (absent otherwise).
            recovery: i == 1,
            health_at_end: (i == 1)
                .then(|| contract::Message("etcd 1 of 3 voters healthy: no quorum".into())),
            ..R::new(
                Id::parse(&format!("op-{i}")).unwrap(),
                Ended {
                    outcome,
                    phase: phases[i * 2 % phases.len()],
                    message: "a message\twith a tab and ünïcode",
                    failed_component: (i % 2 == 0).then_some(C::Etcd),
                    did: Default::default(),
                },
                (&manifests).into(),
                contract::Timestamp("2026-11-30T00:10:00Z".into()),
                "0.1.0".into(),
                if i == 3 {
                    contract::CaSha256::default()
                } else {
                    (&cas).into()
                },
            )
        };
        receipt::validate_receipt(&r).unwrap();
        let bytes = receipt::render_receipt(&r);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let m: Receipt = conforms_file("receipt", "render_receipt", &v);
        let again = serde_json::to_vec_pretty(&m).unwrap();
        let back = receipt::parse_receipt(&again, &r.operation_id).unwrap();
        assert_eq!(back.restarts, r.restarts);
        assert_eq!(v.get("restarts").is_some(), !r.restarts.is_empty());
        assert_eq!(
            (back.recovery, &back.health_at_end),
            (r.recovery, &r.health_at_end)
        );
        assert_eq!(v.get("recovery").is_some(), r.recovery);
    }
    // Every phase name of the closed list has its contract value.
    for p in nvke_cert_runbook::rules::outcome::Phase::all() {
        serde_json::from_value::<contract::Phase>(json!(p.as_string())).unwrap();
    }
}

#[test]
fn agent_state_file_and_restart_rows_match_the_contract_types() {
    use nvke_cert_runbook::rules::agent::{parse_agent_state, AgentIntent};
    let file = json!({
        "version": 3,
        "k8sCertRenewalState": { "phase": "restart_pending", "operationID": "abc", "extra": 1 }
    });
    let m: AgentStateFile = serde_json::from_value(file.clone()).unwrap();
    assert_eq!(m.k8s_cert_renewal_state.phase, AgentPhase::RestartPending);
    let bytes = serde_json::to_vec(&m).unwrap();
    assert!(matches!(
        parse_agent_state(&bytes),
        AgentIntent::Pending { .. }
    ));
    // The agent reads its phases through AgentPhase itself (src/rules/agent.rs).
    for p in [
        "renewing",
        "restart_pending",
        "idle",
        "done",
        "completed",
        "failed",
    ] {
        let f = json!({ "k8sCertRenewalState": { "phase": p } });
        conforms_file::<AgentStateFile>("agent-state", "agent state", &f);
    }
    assert!(serde_json::from_value::<AgentStateFile>(
        json!({ "k8sCertRenewalState": { "phase": "idle", "operationID": null } })
    )
    .is_err());

    let row = contract::Restart {
        component: nvke_cert_runbook::rules::component::Component::KubeApiserver,
        old_container_id: "a1".into(),
        new_container_id: "b2".into(),
        stop_ms: 12,
        healthy_ms: 340,
        total_ms: 700,
        api_unavailable_ms: Some(1400),
    };
    conforms::<contract::Restart>("runbook::Restart", &serde_json::to_value(&row).unwrap())
        .unwrap();
}

// ---------------------------------------------------------------------------
// A real renewal on the simulated node

#[cfg(feature = "sim")]
#[test]
fn renewals_on_the_simulated_node_match_the_contract_types() {
    use support::node::Node;
    let n = Node::new("rsa", json!({}));
    let (code, v, e) = n.run(&["--operation-id", "op-c", "--force"]);
    let v = expect("renewed", (code, v), Kind::Renew, 0);
    assert_eq!(v["outcome"], "renewed", "{e}");
    assert_eq!(v["restarts"].as_array().unwrap().len(), 4);
    assert!(v["etcd"].is_object());
    expect(
        "replay of renewed",
        {
            let (c, v, _) = n.run(&["--operation-id", "op-c"]);
            (c, v)
        },
        Kind::Renew,
        0,
    );
    let phase: Value = serde_json::from_str(&n.phase()).unwrap();
    conforms_file::<PhaseV2File>("phase-v2", "phase after renewal", &phase);
    conforms_file::<Receipt>("receipt", "receipt op-c", &n.receipt("op-c").unwrap());

    // Resume another operation's unfinished work: resumedFrom, superseded.
    n.write_state(
        "phase",
        &n.v2_phase("op-old", "restart_pending", Some("kube-scheduler")),
    );
    let (code, v, e) = n.run(&["--operation-id", "op-new"]);
    let v = expect("resumed", (code, v), Kind::Renew, 0);
    assert_eq!(v["resumedFrom"]["operationID"], "op-old", "{e}");
    conforms_file::<Receipt>(
        "receipt",
        "superseded receipt",
        &n.receipt("op-old").unwrap(),
    );
    let (code, v, _) = n.run(&["--status-only", "--operation-id", "op-old"]);
    expect("status after supersede", (code, v), Kind::Status, 0);

    // A structural refusal by the health gate.
    let n = Node::new("rsa", json!({ "etcd": { "voters": 2 } }));
    let (code, v, _) = n.run(&["--operation-id", "op-2v", "--force"]);
    let v = expect("two voters", (code, v), Kind::Renew, 1);
    assert_eq!(v["phase"], "two-control-plane-voters");
}

// ---------------------------------------------------------------------------
// The drift check itself

/// Apply `f` to a copy of `v` and require the contract types to refuse it;
/// and the committed schema too, unless the change is one only the contract
/// types check (a `pattern`).
fn refused(what: &str, v: &Value, f: impl FnOnce(&mut Value)) {
    refused_by(what, v, f, true)
}

fn refused_by(what: &str, v: &Value, f: impl FnOnce(&mut Value), by_schema: bool) {
    let kind = classify(v).unwrap();
    let mut m = v.clone();
    f(&mut m);
    assert!(
        type_check(what, &m).is_err(),
        "drift not detected by the contract types: {what}\n{m:#}"
    );
    if by_schema {
        assert!(
            !schema_errors(schema_name(kind), &m).is_empty(),
            "drift not detected by embedded/schema/{}: {what}\n{m:#}",
            schema::file_name(schema_name(kind))
        );
    }
}

#[test]
fn the_drift_check_detects_added_removed_renamed_and_retyped_fields() {
    let golden = |case: &str| -> Value {
        let p = repo().join("tests/golden").join(case).join("stdout");
        let mut v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        unmask(&mut v);
        v
    };
    let check = golden("check-lock-held");
    check_document("check-lock-held", &check).unwrap();
    refused("a new top-level field", &check, |v| {
        v["newField"] = json!(1);
    });
    refused("a removed field", &check, |v| {
        v.as_object_mut().unwrap().remove("warnings");
    });
    refused("a renamed field", &check, |v| {
        let o = v.as_object_mut().unwrap();
        let x = o.remove("strayManifests").unwrap();
        o.insert("strays".into(), x);
    });
    refused("a retyped field", &check, |v| {
        v["thresholdDays"] = json!("30")
    });
    refused("a new nested field", &check, |v| {
        v["certificates"][0]["serial"] = json!("01");
    });
    refused("null where the output omits a field", &check, |v| {
        v["manifests"]["etcd"]["error"] = Value::Null;
    });
    refused("an unknown enum value", &check, |v| {
        v["manifests"]["etcd"]["location"] = json!("elsewhere");
    });
    refused("a renamed owner field", &check, |v| {
        let h = v["lock"]["lastOwner"].as_object_mut().unwrap();
        let x = h.remove("bootID").unwrap();
        h.insert("bootId".into(), x);
    });

    let fence = golden("fence-v2-same-id-staged-restored");
    check_document("fence", &fence).unwrap();
    refused("a new receipt field", &fence, |v| {
        v["receipt"]["host"] = json!("cp-1");
    });
    refused("a receipt phase outside the closed list", &fence, |v| {
        v["receipt"]["phase"] = json!("restart:kube-vip");
    });
    refused_by(
        "a bad CA fingerprint",
        &fence,
        |v| v["receipt"]["caSHA256"]["ca.crt"] = json!("ABC"),
        false,
    );

    let usage = golden("args-no-mode");
    check_document("usage", &usage).unwrap();
    refused("a usage error that claims a replay", &usage, |v| {
        v["replayed"] = json!(true)
    });
    refused_by(
        "a control character in a message",
        &usage,
        |v| v["message"] = json!("line\nbreak"),
        false,
    );
    refused("a message over 512 characters", &usage, |v| {
        v["message"] = json!("x".repeat(513))
    });

    let status = golden("status-asked-receipt-confirm");
    check_document("status", &status).unwrap();
    refused("a fencing plan with an unknown action", &status, |v| {
        v["fencing"]["action"] = json!("retry")
    });
}
