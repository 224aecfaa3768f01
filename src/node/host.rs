//! This host's own addresses: where the runbook may ask a component, and
//! whether a URL a manifest names is this machine's.

use std::net::IpAddr;

/// Whether `ip` is this host's: loopback, or an address of one of its
/// interfaces (`getifaddrs(3)`, either family). Not "can a socket bind
/// it": with `net.ipv4.ip_nonlocal_bind` (keepalived and HAProxy nodes set
/// it) any address binds. None listed (the call failed): not this host's.
pub fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || addresses().contains(&ip)
}

/// The addresses of this host's interfaces, either family
/// (`getifaddrs(3)`); empty when the call fails.
pub fn addresses() -> Vec<IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    addrs
        .filter_map(|a| a.address)
        .filter_map(|sa| {
            let v4 = sa.as_sockaddr_in().map(|a| IpAddr::V4(a.ip()));
            v4.or_else(|| sa.as_sockaddr_in6().map(|a| IpAddr::V6(a.ip())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_of_both_families_is_local_and_a_documentation_address_is_not() {
        assert!(is_local("127.0.0.1".parse().unwrap()));
        assert!(is_local("127.0.0.53".parse().unwrap()));
        assert!(is_local("::1".parse().unwrap()));
        assert!(!is_local("192.0.2.50".parse().unwrap()));
        assert!(!is_local("2001:db8::50".parse().unwrap()));
        // Every address an interface has is this host's.
        for a in nix::ifaddrs::getifaddrs()
            .unwrap()
            .filter_map(|a| a.address)
        {
            if let Some(v4) = a.as_sockaddr_in() {
                assert!(is_local(IpAddr::V4(v4.ip())), "{v4}");
            }
        }
    }
}
