//! `X-Forwarded-For`: the nodes limit clients by address, so each request tells them whose it
//! is.

use pingora::http::RequestHeader;
use pingora::prelude::*;
use pingora::proxy::Session;

/// Appends the client's address to the upstream request's `X-Forwarded-For`.
pub(super) fn add_client(session: &Session, upstream_request: &mut RequestHeader) -> Result<()> {
    if let Some(ip) = session
        .client_addr()
        .and_then(|a| a.as_inet())
        .map(|a| a.ip().to_string())
    {
        // Every line the request came with, in order: a proxy in front may have added a line
        // of its own after the client's, and keeping only the first would keep the client's.
        let lines: Vec<&str> = upstream_request
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .map(|v| v.to_str().unwrap_or("unknown"))
            .collect();
        let prior = (!lines.is_empty()).then(|| lines.join(", "));
        let value = forwarded_for(prior.as_deref(), &ip);
        upstream_request.insert_header("x-forwarded-for", value)?;
    }
    Ok(())
}

/// `X-Forwarded-For` with the address the router was connected from appended.
fn forwarded_for(prior: Option<&str>, peer: &str) -> String {
    match prior.map(str::trim) {
        Some(prior) if !prior.is_empty() => format!("{prior}, {peer}"),
        _ => peer.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_is_appended_to_x_forwarded_for() {
        assert_eq!(forwarded_for(None, "10.0.0.9"), "10.0.0.9");
        assert_eq!(forwarded_for(Some(" "), "10.0.0.9"), "10.0.0.9");
        assert_eq!(
            forwarded_for(Some("203.0.113.7"), "10.0.0.9"),
            "203.0.113.7, 10.0.0.9"
        );
    }
}
