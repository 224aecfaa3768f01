//! Operation IDs: never a panic; an accepted ID is exactly its input.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::rules::opid::OperationId;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(id) = OperationId::parse(s) {
            assert_eq!(id.as_str(), s);
        }
    }
});
