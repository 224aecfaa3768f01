//! nvke-cert-runbook: parse, set up logging, dispatch, map to an exit code.
use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    ExitCode::from(nvke_cert_runbook::modes::app::run(
        std::env::args_os().collect(),
    ))
}
