//! Encoding file ids and counter names into the narrow alphabets of KV keys and subjects.

/// Keeps `[A-Za-z0-9_-]` and writes every other byte as `=XX` (upper-case hex), so the
/// result is a valid NATS KV key token (no dots, no wildcards) and decodes back exactly.
pub(crate) fn encode(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push('=');
            out.push_str(&format!("{b:02X}"));
        }
    }
    out
}

/// The inverse of [`encode`]; `None` for text `encode` never produces.
pub(crate) fn decode(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' {
            let hex = encoded.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A namespace names buckets, key prefixes and subjects: `[A-Za-z0-9_-]{1,32}`.
pub(crate) fn check_namespace(ns: &str) -> Result<(), crate::CoordinatorError> {
    let ok = (1..=32).contains(&ns.len())
        && ns
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(crate::CoordinatorError::Invalid(format!(
            "namespace {ns:?} must match [A-Za-z0-9_-]{{1,32}}"
        )))
    }
}

/// Splits `?namespace=NAME` off a coordinator URL: (URL without it, namespace or "atrium").
pub(crate) fn split_namespace(url: &str) -> Result<(String, String), crate::CoordinatorError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), "atrium".to_owned()));
    };
    let mut ns = "atrium".to_owned();
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("namespace=") {
            Some(v) => ns = v.to_owned(),
            None => rest.push(pair),
        }
    }
    check_namespace(&ns)?;
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for raw in ["abc", "a.b/c d", "é=x", "f_1-2", "=3D"] {
            let enc = encode(raw);
            assert!(enc
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-=".contains(&b)));
            assert_eq!(decode(&enc).as_deref(), Some(raw));
        }
        assert_eq!(encode("a.b"), "a=2Eb");
        assert_eq!(decode("=Z"), None);
    }

    #[test]
    fn namespaces_come_from_the_query() {
        let (u, ns) = split_namespace("nats://h:1?namespace=t_1").unwrap();
        assert_eq!((u.as_str(), ns.as_str()), ("nats://h:1", "t_1"));
        let (u, ns) = split_namespace("redis://h:1/0?a=b&namespace=x").unwrap();
        assert_eq!((u.as_str(), ns.as_str()), ("redis://h:1/0?a=b", "x"));
        assert_eq!(split_namespace("redis://h").unwrap().1, "atrium");
        assert!(split_namespace("nats://h?namespace=a.b").is_err());
    }
}
