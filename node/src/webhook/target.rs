//! Where a webhook may be sent: an `http(s)` URL, and, when
//! `ATRIUM_WEBHOOK_BLOCK_PRIVATE` is on, only to public addresses, checked on the
//! address the name resolved to, at connect time (so a name that resolves to a public
//! address when the endpoint is made and to an internal one later is still refused).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Longest URL an endpoint may have.
pub const MAX_URL: usize = 2048;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Target {
    /// The `Host` header: the port only when it is not the scheme's own.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if (self.https && self.port == 443) || (!self.https && self.port == 80) {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// Parses an endpoint URL: `http://` or `https://`, a host, an optional port, a path.
/// No user info, no fragment, plain ASCII without spaces or control characters.
pub fn parse(url: &str) -> Result<Target, &'static str> {
    let bad = "`url` must be an http(s) URL with a host";
    if url.len() > MAX_URL {
        return Err("`url` is too long (at most 2048 bytes)");
    }
    if !url.bytes().all(|b| b.is_ascii_graphic()) || url.contains('#') {
        return Err(bad);
    }
    let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(bad);
    };
    let cut = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(cut);
    let path = if path.is_empty() {
        "/".to_owned()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    if authority.contains('@') || authority.is_empty() {
        return Err(bad);
    }
    let default_port = if https { 443 } else { 80 };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse::<u16>().map_err(|_| bad)?,
            None if after.is_empty() => default_port,
            None => return Err(bad),
        };
        h.parse::<Ipv6Addr>().map_err(|_| bad)?;
        (h.to_owned(), port)
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h.to_owned(), p.parse::<u16>().map_err(|_| bad)?),
            None => (authority.to_owned(), default_port),
        }
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'_'));
    if !host_ok || port == 0 {
        return Err(bad);
    }
    Ok(Target {
        https,
        host: host.to_ascii_lowercase(),
        port,
        path,
    })
}

/// Whether an address is one a webhook may reach with private addresses blocked: not
/// loopback, private, link-local, shared (CGNAT), unspecified, multicast, broadcast,
/// documentation or otherwise reserved; IPv4 inside IPv6 judged as IPv4.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public_v4(v4);
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64, may reach IPv4 inside
                || s[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible, deprecated
        }
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared address space (CGNAT)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
        || o[0] >= 240) // reserved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_strictly() {
        let t = parse("https://hooks.example.com/atrium?x=1").unwrap();
        assert_eq!(
            (t.https, t.port, t.path.as_str()),
            (true, 443, "/atrium?x=1")
        );
        assert_eq!(t.host_header(), "hooks.example.com");
        let t = parse("http://127.0.0.1:9000").unwrap();
        assert_eq!((t.port, t.path.as_str()), (9000, "/"));
        assert_eq!(t.host_header(), "127.0.0.1:9000");
        let t = parse("http://[::1]:81/h").unwrap();
        assert_eq!(
            (t.host.as_str(), t.host_header()),
            ("::1", "[::1]:81".into())
        );
        for bad in [
            "ftp://x/",
            "https://",
            "https://user@x/",
            "https://x:99999/",
            "https://x/#frag",
            "https://x y/",
            "https://x/\n",
            "https://[zz]/",
            "//x/",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
