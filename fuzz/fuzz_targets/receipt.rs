//! Receipts: never a panic; a parsed receipt renders and parses back equal.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::rules::opid::OperationId;
use nvke_cert_runbook::rules::receipt::{parse_receipt, render_receipt};

fuzz_target!(|data: &[u8]| {
    let id = OperationId::parse("op-fuzz").unwrap();
    if let Ok(r) = parse_receipt(data, &id) {
        assert_eq!(parse_receipt(&render_receipt(&r), &id).as_ref(), Ok(&r));
    }
});
