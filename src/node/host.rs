//! This host's own addresses: where the runbook may ask a component, and
//! whether a URL a manifest names is this machine's.

use std::net::{IpAddr, SocketAddr};

/// Whether `ip` is this host's: loopback, or an address a socket can be
/// bound to (the kernel's own answer, for either family; nothing listens).
pub fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || std::net::TcpListener::bind(SocketAddr::new(ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_of_both_families_is_local_and_a_documentation_address_is_not() {
        assert!(is_local("127.0.0.1".parse().unwrap()));
        assert!(is_local("::1".parse().unwrap()));
        assert!(!is_local("192.0.2.50".parse().unwrap()));
        assert!(!is_local("2001:db8::50".parse().unwrap()));
    }
}
