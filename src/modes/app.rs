//! Dispatch: from raw arguments to a report and an exit code. `main` only
//! calls [`run`].

use crate::contract::cli::{self, Cli, Invocation, Mode, OutputFormat, UsageError};
use crate::contract::{self, ArgumentsOutcome, HelpDocument, UsageErrorDocument};
use crate::modes::output::{self, Report};
use crate::node::fsx::Root;
use crate::rules::outcome::exit;
use clap::Parser;
use std::ffi::OsString;

fn usage_report(e: &UsageError) -> Report {
    let doc = UsageErrorDocument::new(e.mode, ArgumentsOutcome::UsageError, &e.message);
    Report {
        code: exit::USAGE,
        text: format!("error: {}\n(see nvke-cert-runbook --help)", doc.message.0),
        doc: Box::new(doc),
    }
}

/// `failed`, phase `arguments`: the mode could not start (`--root` cannot
/// be opened) or panicked.
fn arguments_failed(
    inv: &Invocation,
    code: u8,
    message: &str,
) -> (u8, Box<dyn contract::Printed>, String) {
    let doc = UsageErrorDocument::new(Some(inv.mode.name()), ArgumentsOutcome::Failed, message);
    let message = doc.message.0.clone();
    (code, Box::new(doc), message)
}

fn init_logging(format: cli::LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(crate::node::oplog::make_writer)
        .log_internal_errors(false)
        .with_target(false)
        .with_max_level(tracing::Level::INFO);
    let _ = match format {
        cli::LogFormat::Text => builder.with_ansi(false).try_init(),
        cli::LogFormat::Json => builder.json().try_init(),
    };
}

/// Everything `main` does: parse, set up logging, dispatch, print once, and
/// return the exit code.
pub fn run(args: Vec<OsString>) -> u8 {
    let json_out = cli::wants_json(&args);
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            // `--help` alone is the full page; with a mode's flag, in
            // either order, that mode's page (SPEC 6 v1.2).
            if e.kind() == ErrorKind::DisplayHelp || cli::help_after_operation_id(&args, &e) {
                let help = cli::help_for(&args);
                if json_out {
                    output::emit_json(contract::help_line(&HelpDocument::new(help)));
                } else {
                    output::emit_text(&help);
                }
                return exit::OK;
            }
            let mut first = cli::clap_error_message(&e);
            if e.kind() == ErrorKind::InvalidUtf8 {
                if let Some(bad) = non_utf8_argument(&args) {
                    first = format!("{first}: {bad}");
                }
            }
            let err = UsageError {
                message: first,
                mode: cli::guess_mode(&args),
            };
            return finish(usage_report(&err), json_out, 0);
        }
    };
    let mut inv = match cli::validate(cli) {
        Ok(inv) => inv,
        Err(e) => return finish(usage_report(&e), json_out, 0),
    };
    inv.global.program = cli::program_name(&args);
    let json_out = inv.global.output == OutputFormat::Json;
    init_logging(inv.global.log_format);
    install_panic_hook();
    let start = std::time::Instant::now();
    // No panic ends the process without its one JSON object (SPEC 4, v1.1:
    // the renewal has its own guard that restores and writes the receipt;
    // this one covers every mode).
    let mut report = std::panic::catch_unwind(|| dispatch(&inv)).unwrap_or_else(|payload| {
        panic_report(
            &inv,
            &crate::modes::runbook::panic_message(payload.as_ref()),
        )
    });
    if !inv.global.wide {
        // Every mode's text within the terminal (status and check fit
        // theirs already, with their verdict lines coloured).
        report.text = crate::contract::screen::fit(&report.text, inv.global.term.width);
    }
    // Golden tests fix the clock; durations would make them flaky.
    let duration_ms = if inv.global.clock.is_fixed() {
        0
    } else {
        start.elapsed().as_millis() as u64
    };
    finish(report, json_out, duration_ms)
}

/// A panic's message goes to the log (never straight to a stderr that may
/// be stalled, as the default hook would write it); the mode's guard then
/// reports it once.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        // Never through the default hook (a blocking write to fd 2) nor
        // the log machinery (the panic may be inside it): oplog's
        // emergency line never blocks.
        crate::node::oplog::emergency(&format!(
            "{} ERROR internal error (a panic){at}: {}",
            crate::rules::clock::rfc3339(time::OffsetDateTime::now_utc()),
            crate::modes::runbook::panic_message(info.payload())
        ));
    }));
}

/// What a mode that panicked reports: `failed`, exit 4 when one of the four
/// manifests is not active (an operator must act), else 1.
fn panic_report(inv: &Invocation, why: &str) -> Report {
    let all_active = Root::open(&inv.global.root)
        .map(|r| crate::node::manifests::placement(&r).all_active())
        .unwrap_or(false);
    let (code, doc, message) = arguments_failed(
        inv,
        crate::rules::outcome::exit_code_for(crate::rules::outcome::Outcome::Failed, all_active),
        &format!("internal error (a panic): {why}"),
    );
    Report {
        code,
        doc,
        text: format!("FAILED: {message}"),
    }
}

/// The first argument that is not UTF-8, escaped, with the option it is the
/// value of (clap only says "invalid UTF-8 was detected").
fn non_utf8_argument(args: &[OsString]) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let i = args.iter().skip(1).position(|a| a.to_str().is_none())? + 1;
    let bad = &args[i];
    match args[i - 1].to_str() {
        Some(prev)
            if i > 1
                && prev.starts_with("--")
                && !prev.contains('=')
                && !bad.as_bytes().starts_with(b"-") =>
        {
            Some(format!("{prev} {bad:?}"))
        }
        _ => Some(format!("{bad:?}")),
    }
}

/// Print the report once and return its exit code, which the JSON document
/// carries too (`exitCode`, SPEC 7, v1.1): stamped here, with the run's
/// duration, from the one code the process exits with, so the two cannot
/// differ.
fn finish(mut report: Report, json_out: bool, duration_ms: u64) -> u8 {
    report.doc.stamp(duration_ms, report.code);
    if json_out {
        // Text from outside the runbook never reaches a JSON consumer with
        // a control character in it (issue 25): `contract::line`.
        output::emit_json(contract::line(report.doc.as_ref()));
    } else if report.code == exit::USAGE {
        output::emit_stderr(&report.text);
    } else {
        output::emit_text(&report.text);
    }
    report.code
}

fn open_root(inv: &Invocation) -> Result<Root, Report> {
    Root::open(&inv.global.root).map_err(|e| {
        let (code, doc, _) = arguments_failed(inv, exit::FAILED, &e.to_string());
        Report {
            code,
            doc,
            text: format!("error: {e}"),
        }
    })
}

fn dispatch(inv: &Invocation) -> Report {
    if let Mode::Version = inv.mode {
        return Report {
            code: exit::OK,
            doc: Box::new(crate::contract::VersionDocument::current()),
            text: crate::contract::version::text(),
        };
    }
    let root = match open_root(inv) {
        Ok(r) => r,
        Err(rep) => return rep,
    };
    match &inv.mode {
        Mode::Check { force, agent_state } => {
            crate::modes::check::run(&root, &inv.global, *force, agent_state.as_deref())
        }
        Mode::Status {
            operation_id,
            evidence,
            receipts,
        } => {
            // Writing evidence (SPEC 6, v1.2): SIGTERM, SIGINT and SIGHUP
            // stop the bundle, never the view; installed before the view
            // starts, so a signal at any time leaves no file and one document.
            let cancel = evidence
                .is_some()
                .then(crate::tools::signals::install_for_evidence);
            crate::modes::status::view(
                &root,
                &inv.global,
                &crate::modes::status::Ask {
                    id: operation_id.as_ref(),
                    evidence: evidence.as_deref(),
                    receipts: *receipts,
                    cancel: cancel.as_ref(),
                },
                &crate::modes::live::observe(&root, &inv.global),
            )
        }
        Mode::Fence { operation_id } => {
            // SIGTERM/SIGINT end its lock wait, never its work (SPEC 6).
            crate::modes::fence::fence(
                &root,
                &inv.global,
                operation_id,
                &crate::tools::signals::install(),
            )
        }
        Mode::Renew {
            operation_id,
            force,
            expect_ca_sha256,
            recover_expired,
        } => renew(
            &root,
            inv,
            crate::modes::runbook::Request::V2 {
                id: operation_id.clone(),
                force: *force,
                expect_ca: expect_ca_sha256.clone(),
                recovery: *recover_expired,
            },
        ),
        Mode::LegacyV1 { force } => renew(
            &root,
            inv,
            crate::modes::runbook::Request::Legacy { force: *force },
        ),
        Mode::Version => unreachable!("handled above"),
    }
}

fn renew(root: &Root, inv: &Invocation, req: crate::modes::runbook::Request) -> Report {
    let cancel = crate::tools::signals::install().with_deadline_of(&inv.global);
    let rt = crate::tools::runtime::NodeRuntime::new(
        &crate::tools::runtime::ToolOptions::of(&inv.global),
        root,
        cancel.clone(),
    );
    crate::modes::runbook::run(root, &inv.global, &req, &rt, &cancel)
}
