//! The TLS settings of a Postgres URL's query.

pub(super) fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// The URL without its `sslmode` and `sslrootcert` query parameters, and their values
/// (percent-decoded). Strings that are not URLs (`host=... user=...`) pass unchanged.
pub(super) fn take_ssl_params(
    url: &str,
) -> Result<(String, Option<String>, Option<String>), String> {
    let Some((base, query)) = url.split_once('?').filter(|_| is_url(url)) else {
        return Ok((url.to_owned(), None, None));
    };
    let (mut mode, mut root) = (None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match decode(k)?.as_str() {
            "sslmode" => mode = Some(decode(v)?),
            "sslrootcert" => root = Some(decode(v)?),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, mode, root.filter(|r| !r.is_empty())))
}

/// Percent-decodes a URL query component (`+` stays `+`, as tokio-postgres reads it).
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "bad Postgres URL: a bad %-escape in the query".to_string())?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "bad Postgres URL: the query is not UTF-8".to_string())
}
