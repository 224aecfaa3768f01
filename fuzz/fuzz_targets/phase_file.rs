//! Both phase formats: never a panic; whatever parses renders back to bytes
//! that parse to the same value.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::rules::phase::{parse_phase_file, render_legacy, render_v2, PhaseFile};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = parse_phase_file(data) {
        let bytes = match &p {
            PhaseFile::V2(v) => render_v2(v),
            PhaseFile::Legacy(l) => render_legacy(l),
        };
        assert_eq!(parse_phase_file(&bytes).as_ref(), Ok(&p));
    }
});
