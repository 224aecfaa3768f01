//! The JSON Schemas of the contract, generated from the document types
//! (feature `schema`; `tests/contract.rs` writes `embedded/schema/`).

use super::*;
use schemars::{JsonSchema, Schema};

/// The schema of `T`, for what the binary serializes: a field is required
/// exactly when it is always printed.
pub fn schema_for<T: JsonSchema>(name: &str) -> Schema {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    schema.insert(
        "$id".into(),
        format!("urn:nvke-cert-runbook:schema:{name}").into(),
    );
    schema.insert(
        "x-contractVersion".into(),
        crate::contract::version::CONTRACT_VERSION.into(),
    );
    schema
}

/// Every schema of the contract: `(name, schema)`; the committed file is
/// `embedded/schema/<name>.schema.json`.
pub fn all() -> Vec<(&'static str, Schema)> {
    vec![
        ("renew", schema_for::<RenewDocument>("renew")),
        ("check", schema_for::<CheckDocument>("check")),
        ("status", schema_for::<StatusDocument>("status")),
        ("fence", schema_for::<FenceDocument>("fence")),
        (
            "usage-error",
            schema_for::<UsageErrorDocument>("usage-error"),
        ),
        ("version", schema_for::<VersionDocument>("version")),
        ("help", schema_for::<HelpDocument>("help")),
        ("phase-v2", schema_for::<PhaseV2File>("phase-v2")),
        ("receipt", schema_for::<Receipt>("receipt")),
        ("agent-state", schema_for::<AgentStateFile>("agent-state")),
        ("lock-owner", schema_for::<LockOwnerFile>("lock-owner")),
        ("evidence", schema_for::<EvidenceManifest>("evidence")),
    ]
}

/// The committed file name of a schema.
pub fn file_name(name: &str) -> String {
    format!("{name}.schema.json")
}

/// A committed schema file's text: pretty JSON, trailing newline.
pub fn render(schema: &Schema) -> String {
    let mut s = serde_json::to_string_pretty(schema.as_value()).unwrap_or_default();
    s.push('\n');
    s
}

/// The static part of `embedded/manifest.json`: everything but the binary's
/// sha256, size and git commit, which `embedded/gen-manifest` fills in next to
/// a built binary.
pub fn manifest_template() -> serde_json::Value {
    use crate::rules::outcome::exit;
    let schemas: serde_json::Map<String, serde_json::Value> = all()
        .iter()
        .map(|(n, _)| (n.to_string(), file_name(n).into()))
        .collect();
    serde_json::json!({
        "manifestFormat": "nvke-cert-runbook/embedded-manifest/v1",
        "binary": {
            "name": "nvke-cert-runbook",
            "target": "x86_64-unknown-linux-gnu",
            "static": true,
            "sha256": null,
            "size": null,
        },
        "runbookVersion": crate::contract::version::RUNBOOK_VERSION,
        "gitCommit": null,
        "contractVersion": crate::contract::version::CONTRACT_VERSION,
        "globalOptions": [
            "--root DIR", "--output text|json", "--log-format text|json",
            "--threshold-days N", "--lock-timeout SECS", "--stop-timeout SECS",
            "--health-timeout SECS", "--command-timeout SECS", "--kubeadm PATH",
            "--crictl PATH", "--kubeadm-config PATH", "--runtime-endpoint URL", "--wide"
        ],
        "modes": [
            {
                "name": "renew",
                "args": ["--operation-id", "ID"],
                "options": ["--force", "--threshold-days N", "--expect-ca-sha256 NAME=HEX", "--deadline RFC3339"],
                "output": "renew",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE, exit::LOCK_TIMEOUT, exit::OPERATOR_MUST_ACT, exit::FENCED],
            },
            {
                "name": "legacy-v1",
                "args": ["--legacy-v1"],
                "options": ["--force", "--threshold-days N", "--deadline RFC3339"],
                "output": "renew",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE, exit::LOCK_TIMEOUT, exit::OPERATOR_MUST_ACT],
            },
            {
                "name": "check",
                "args": ["--check"],
                "options": ["--force", "--threshold-days N", "--agent-state PATH"],
                "output": "check",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE],
            },
            {
                "name": "status",
                "args": ["--status-only"],
                "options": ["--operation-id ID", "--evidence PATH", "--receipts recent|all|failed"],
                "output": "status",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE, exit::OPERATOR_MUST_ACT],
            },
            {
                "name": "fence",
                "args": ["--status-only", "--operation-id", "ID", "--fence"],
                "options": ["--deadline RFC3339"],
                "output": "fence",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE, exit::LOCK_TIMEOUT],
            },
            {
                "name": "version",
                "args": ["--version"],
                "options": [],
                "output": "version",
                "exitCodes": [exit::OK, exit::USAGE],
            },
            {
                "name": "help",
                "args": ["--help"],
                "options": [],
                "output": "help",
                "exitCodes": [exit::OK],
            },
        ],
        "usageErrorOutput": "usage-error",
        "exitCodes": [
            { "code": exit::OK, "name": "ok",
              "meaning": "renewed or unchanged (or a replayed success); status: confirmed, or a clean node; check: decided" },
            { "code": exit::FAILED, "name": "failed",
              "meaning": "failed, cancelled, or refused, and all four manifests are active; status: unconfirmed or not clean; check: failed" },
            { "code": exit::USAGE, "name": "usage",
              "meaning": "usage error; nothing written" },
            { "code": exit::LOCK_TIMEOUT, "name": "lock-timeout",
              "meaning": "lock not acquired in time; nothing written" },
            { "code": exit::OPERATOR_MUST_ACT, "name": "operator-must-act",
              "meaning": "a manifest is still staged or missing (failed_not_restored, or any run that exits with a manifest not active): an operator must act" },
            { "code": exit::FENCED, "name": "fenced",
              "meaning": "replay of an abandoned or superseded receipt: this attempt was fenced; nothing done" },
        ],
        "files": [
            { "name": "phase-v2", "path": "/var/lib/nvke/k8s-cert-renewal/phase", "access": "read-write",
              "note": "or the legacy five-line format (not JSON, SPEC section 3)" },
            { "name": "receipt", "path": "/var/lib/nvke/k8s-cert-renewal/completed/<ID>.json", "access": "create-once" },
            { "name": "lock-owner", "path": "/var/lib/nvke/k8s-cert-renewal/owner", "access": "read-write" },
            { "name": "agent-state", "path": "/var/lib/nvke/node-agent/k8s-cert-renewal-state.json", "access": "read-only" },
        ],
        "schemaDir": "embedded/schema",
        "schemas": schemas,
    })
}
