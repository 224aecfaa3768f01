//! Kubeconfigs (YAML): never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::rules::pki::{kubeconfig_client_cert, kubeconfig_client_key};

fuzz_target!(|data: &[u8]| {
    let _ = kubeconfig_client_cert(data);
    let _ = kubeconfig_client_key(data);
});
