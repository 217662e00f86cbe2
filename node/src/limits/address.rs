//! Client addresses: the key an address is limited by, trusted proxies'
//! networks, and the address behind a trusted proxy.

use std::net::IpAddr;

/// The key a client address is limited by: the address itself for IPv4, its
/// /64 for IPv6 (one subscriber or host usually holds a whole /64, so counting
/// single IPv6 addresses would let one client be 2^64 clients). An IPv4 address
/// mapped into IPv6 counts as the IPv4 address.
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

/// An address or a range of them (`10.244.0.0/16`, `fd00::/8`, `127.0.0.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    base: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `ip` or `ip/prefix`; `None` when it is neither.
    pub fn parse(s: &str) -> Option<Self> {
        let (ip, prefix) = match s.trim().split_once('/') {
            Some((ip, p)) => (ip.parse::<IpAddr>().ok()?, Some(p.parse::<u8>().ok()?)),
            None => (s.trim().parse::<IpAddr>().ok()?, None),
        };
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Self { base: ip, prefix })
    }

    pub fn contains(&self, ip: &IpAddr) -> bool {
        let (a, b, bits) = match (self.base, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                (u128::from(u32::from(a)), u128::from(u32::from(*b)), 32)
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(*b), 128),
            _ => return false,
        };
        let shift = bits - u32::from(self.prefix);
        shift >= bits || (a >> shift) == (b >> shift)
    }
}

/// The client's address: the peer, or, when the peer is a trusted proxy, the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
pub fn client_address(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Network]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let Some(header) = forwarded_for else {
        return peer;
    };
    header
        .split(',')
        .rev()
        .filter_map(|s| s.trim().parse::<IpAddr>().ok())
        .find(|a| !is_trusted(a))
        .unwrap_or(peer)
}
