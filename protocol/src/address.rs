//! How a client address is counted by the limits of the node and the router alike.

use std::net::{IpAddr, Ipv6Addr};

/// The key a client address is limited by: the address itself for IPv4, its /64 for
/// IPv6 (one subscriber or host usually holds a whole /64, so counting single IPv6
/// addresses would let one client be 2^64 clients). An IPv4 address mapped into IPv6
/// counts as the IPv4 address.
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}
