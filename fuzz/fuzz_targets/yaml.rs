//! Static pod manifests and the kubelet's configuration (YAML), through
//! the runbook's own entry points: never a panic, and never more memory
//! than the bounds allow (fuzz/run runs this target under `ulimit -v` and a
//! tight `-rss_limit_mb`, so an expansion that escapes the bounds fails the
//! run). Whatever parses stays within them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::node::{
    apiserver_secure_port, etcd_client_port, etcd_peer_address, parse_rotation, pod_component,
    renewed_mounts,
};
use nvke_cert_runbook::rules::yaml;

fuzz_target!(|data: &[u8]| {
    let _ = pod_component(data);
    let _ = apiserver_secure_port(data);
    let _ = etcd_client_port(data);
    let _ = etcd_peer_address(data);
    let _ = renewed_mounts(data);
    let _ = parse_rotation(data);
    if let Ok(v) = yaml::parse_value(data) {
        // Within the node bound: count what was built.
        fn nodes(v: &serde_json::Value, depth: usize) -> usize {
            assert!(depth <= yaml::MAX_DEPTH + 1, "deeper than the bound");
            1 + match v {
                serde_json::Value::Array(a) => a.iter().map(|x| nodes(x, depth + 1)).sum(),
                serde_json::Value::Object(o) => o.values().map(|x| 1 + nodes(x, depth + 1)).sum(),
                _ => 0,
            }
        }
        let _ = nodes(&v, 0);
    }
});
