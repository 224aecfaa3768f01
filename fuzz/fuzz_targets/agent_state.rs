//! The typed agent's state file: never a panic (every input maps to an intent).
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::rules::agent::parse_agent_state;

fuzz_target!(|data: &[u8]| {
    let _ = parse_agent_state(data).as_str();
});
