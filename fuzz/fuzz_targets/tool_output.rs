//! What crictl and etcdctl print: never a panic, and the quorum judgement of
//! whatever parses never panics either.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nvke_cert_runbook::rules::cri::{
    judge_etcd, parse_endpoint_health, parse_member_list, parse_pods, parse_ps_kube_system, Listing,
};

fuzz_target!(|data: &[u8]| {
    if let (Ok(containers), Ok(sandboxes)) = (parse_ps_kube_system(data), parse_pods(data)) {
        let _ = Listing {
            containers,
            sandboxes,
        }
        .component("etcd");
    }
    let health = parse_endpoint_health(data);
    if let (Ok(members), Ok(h)) = (parse_member_list(data), health) {
        let _ = judge_etcd(&h, &h, &members);
    }
});
