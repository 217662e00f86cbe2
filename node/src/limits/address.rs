//! Client addresses: the key an address is limited by, trusted proxies'
//! networks, and the address behind a trusted proxy.

use std::net::IpAddr;

/// The key a client address is limited by (IPv4 as is, IPv6 by its /64), shared with the
/// router.
pub use atrium_protocol::address_key;

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
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy (`forwarded_for`:
/// every line of the header, joined in order). An entry with a port (`203.0.113.5:4711`,
/// `[2001:db8::1]:443`, as some balancers write) counts as its address. An entry that names
/// no address (`unknown`, garbage) ends the walk: whoever wrote it is not known, so the
/// nearest trusted hop counts as the client, never an address further left, which the
/// client may have written itself.
pub fn client_address(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Network]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let Some(header) = forwarded_for else {
        return peer;
    };
    let mut nearest = peer;
    for entry in header.split(',').rev() {
        match hop(entry.trim()) {
            Some(ip) if is_trusted(&ip) => nearest = ip,
            Some(ip) => return ip,
            None => return nearest,
        }
    }
    peer
}

/// One `X-Forwarded-For` entry's address, with or without a port.
pub fn hop(entry: &str) -> Option<IpAddr> {
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<std::net::SocketAddr>().ok().map(|a| a.ip()))
        .or_else(|| entry.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
        // `::ffff:203.0.113.5` is the IPv4 client it names, as a dual-stack peer is.
        .map(|ip| ip.to_canonical())
}
