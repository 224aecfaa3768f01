//! nvke-cert-runbook: parse, set up logging, dispatch, map to an exit code.
use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(nvke_cert_runbook::app::run(std::env::args_os().collect()))
}
