//! The negotiation of permessage-deflate (RFC 7692 §7.1): the client's offers
//! read, and our answer to the first one we can honour.

use hyper::header::HeaderMap;

use super::EXTENSIONS;

/// Our deflate answer: no context takeover either way (see the module `ws`).
pub(super) const DEFLATE_ANSWER: &str =
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// Our `Sec-WebSocket-Extensions` answer to the first permessage-deflate offer
/// we can honour, if any.
pub(super) fn negotiate_deflate(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(EXTENSIONS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(split_outside_quotes(','))
        .find_map(answer_offer)
}

/// Splits on `sep` where it is not inside a quoted string.
fn split_outside_quotes(sep: char) -> impl Fn(&str) -> Vec<&str> {
    move |s: &str| {
        let mut parts = Vec::new();
        let (mut start, mut quoted) = (0, false);
        for (i, c) in s.char_indices() {
            if c == '"' {
                quoted = !quoted;
            } else if c == sep && !quoted {
                parts.push(&s[start..i]);
                start = i + 1;
            }
        }
        parts.push(&s[start..]);
        parts
    }
}

/// Our answer to one extension offer, or `None` when it is not a
/// permessage-deflate offer we can honour (RFC 7692 §7.1).
fn answer_offer(offer: &str) -> Option<String> {
    let mut items = split_outside_quotes(';')(offer).into_iter().map(str::trim);
    if !items.next()?.eq_ignore_ascii_case("permessage-deflate") {
        return None;
    }
    let mut seen: Vec<String> = Vec::new();
    let mut server_bits_offered = false;
    for param in items {
        let (name, value) = match param.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
            None => (param, None),
        };
        let name = name.to_ascii_lowercase();
        // A parameter given twice makes the offer invalid (§7.1).
        if seen.contains(&name) {
            return None;
        }
        match (name.as_str(), value) {
            ("server_no_context_takeover" | "client_no_context_takeover", None) => {}
            // The client may then use any window up to its value: our inflater
            // takes any window, so the parameter needs no answer (§7.1.2.2).
            ("client_max_window_bits", None) => {}
            ("client_max_window_bits", Some(v)) => {
                window_bits(v)?;
            }
            // We compress with 15-bit windows only: a smaller limit is declined.
            ("server_max_window_bits", Some(v)) if window_bits(v)? == 15 => {
                server_bits_offered = true;
            }
            _ => return None,
        }
        seen.push(name);
    }
    let mut answer = String::from(DEFLATE_ANSWER);
    if server_bits_offered {
        // Accepting this parameter means echoing it with an equal or smaller value.
        answer.push_str("; server_max_window_bits=15");
    }
    Some(answer)
}

/// A window size parameter: 8 to 15, decimal digits only.
pub(super) fn window_bits(value: &str) -> Option<u8> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) || value.len() > 2 {
        return None;
    }
    let bits: u8 = value.parse().ok()?;
    (8..=15).contains(&bits).then_some(bits)
}
