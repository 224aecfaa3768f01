//! PEM certificates and private keys: never a panic. The input is split at
//! its first NUL: before it a certificate file, after it a key file.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::rules::pki::{key_matches_cert, parse_pem_certificate, verify_signed_by};

fuzz_target!(|data: &[u8]| {
    let (cert, key) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    if let Ok(c) = parse_pem_certificate(cert) {
        let _ = verify_signed_by(&c, &c);
        let _ = key_matches_cert(&c, key);
    }
});
