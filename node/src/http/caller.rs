//! Who is asking: the session token, its account, and the client's address.

use hyper::body::Incoming;
use hyper::Request;

use super::ApiError;
use crate::apptoken::{is_app_token, AppClaims};
use crate::ids::digest;
use crate::state::AppState;
use crate::store::{Account, StoreError};

/// The caller's session token, if it sent one.
pub fn bearer_token(req: &Request<Incoming>) -> Option<String> {
    let header = req
        .headers()
        .get(hyper::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    crate::auth::bearer(header).map(str::to_owned)
}

/// The claims of an app token (docs/auth.md); 401 for one that fails a check.
pub async fn app_claims(state: &AppState, token: &str) -> Result<AppClaims, ApiError> {
    state.app_tokens.verify(token).await.map_err(|e| {
        tracing::debug!(error = %e, "app token refused");
        ApiError::unauthorized()
    })
}

/// The account an app person stands for: no Atrium account, no email, no password;
/// the id its files are owned by.
pub fn app_account(claims: &AppClaims) -> Account {
    Account {
        id: claims.account(),
        email: String::new(),
        name: claims.display_name(),
        password_hash: String::new(),
    }
}

/// The account behind the request's token: `Ok(None)` without a token, 401 for a
/// bad or signed-out one. An app token (it holds a `.`) stands for its `sub`.
pub async fn caller(state: &AppState, token: Option<&str>) -> Result<Option<Account>, ApiError> {
    let Some(token) = token else { return Ok(None) };
    if is_app_token(token) {
        return Ok(Some(app_account(&app_claims(state, token).await?)));
    }
    match state.store.session_account(digest(token)).await {
        Ok(a) => Ok(Some(a)),
        Err(StoreError::NotFound) => Err(ApiError::unauthorized()),
        Err(e) => Err(e.into()),
    }
}

pub async fn signed_in(state: &AppState, token: Option<&str>) -> Result<Account, ApiError> {
    caller(state, token)
        .await?
        .ok_or_else(ApiError::unauthorized)
}

/// The client's address (the peer, or what a trusted proxy forwarded).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::IpAddr);

/// Whether the caller is on the node's own machine: the connection comes from a loopback
/// address, with no forwarding header but `X-Forwarded-For`, and that only from a trusted
/// proxy and naming nothing but loopback addresses (every hop). A pod of the cluster
/// connecting directly, a router elsewhere, a local proxy forwarding others (a sidecar),
/// or a trusted one forwarding a trusted pod is not. Decided on its own, not by the walk
/// that finds the client for rate limits: that one falls back to the peer.
#[derive(Debug, Clone, Copy)]
pub struct OnThisMachine(pub bool);

impl OnThisMachine {
    pub fn of(
        peer: std::net::IpAddr,
        forwarded_for: Option<&str>,
        other_forwarding: bool,
        trusted: &[crate::limits::Network],
    ) -> Self {
        let loopback = |ip: std::net::IpAddr| ip.to_canonical().is_loopback();
        let trusted_peer = || {
            let forms = [peer, peer.to_canonical()];
            trusted
                .iter()
                .any(|n| forms.iter().any(|ip| n.contains(ip)))
        };
        let local_hops = |header: &str| {
            header
                .split(',')
                .all(|entry| crate::limits::hop(entry.trim()).is_some_and(loopback))
        };
        Self(
            loopback(peer)
                && !other_forwarding
                && forwarded_for.is_none_or(|h| trusted_peer() && local_hops(h)),
        )
    }
}

/// The connection's peer, in its IPv4 form when it is one.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::IpAddr);

/// Whether the caller of a request is on the node's own machine ([`OnThisMachine`]):
/// worked out only where it is asked (an admin's sign-up), not for every request.
pub fn on_this_machine(state: &crate::state::AppState, req: &Request<Incoming>) -> bool {
    let Some(&Peer(peer)) = req.extensions().get::<Peer>() else {
        return false;
    };
    let forwarded = super::forwarded_for(req.headers());
    let other = proxied_otherwise(req.headers());
    OnThisMachine::of(peer, forwarded.as_deref(), other, &state.trusted).0
}

/// Whether a request carries a sign of a proxy other than `X-Forwarded-For`: another
/// forwarding header, or one a service mesh's sidecar adds (Envoy's, Linkerd's). Such a
/// proxy may connect from loopback on behalf of callers anywhere.
fn proxied_otherwise(headers: &hyper::HeaderMap) -> bool {
    const NAMED: [&str; 5] = [
        "forwarded",
        "x-real-ip",
        "via",
        "x-forwarded-host",
        "x-forwarded-client-cert",
    ];
    NAMED.iter().any(|h| headers.contains_key(*h))
        || headers
            .keys()
            .any(|k| k.as_str().starts_with("x-envoy-") || k.as_str().starts_with("l5d-"))
}

/// The client address of a request.
pub fn client_addr(req: &Request<Incoming>) -> std::net::IpAddr {
    req.extensions()
        .get::<ClientAddr>()
        .map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| a.0)
}

#[cfg(test)]
mod tests {
    use super::OnThisMachine;
    use crate::limits::Network;

    fn local(peer: &str, xff: Option<&str>, other: bool, trusted: &[&str]) -> bool {
        let trusted: Vec<Network> = trusted.iter().map(|t| Network::parse(t).unwrap()).collect();
        OnThisMachine::of(peer.parse().unwrap(), xff, other, &trusted).0
    }

    /// Only a loopback connection is local, and one with `X-Forwarded-For` only from a
    /// trusted proxy whose every hop is on loopback: not a proxy's trusted pod, nor a peer
    /// that is trusted in one spelling of its address and not in the other (the
    /// twenty-eighth review: a dual-stack bind sees `::ffff:127.0.0.1`), nor a proxy that
    /// forwards by another header.
    #[test]
    fn only_loopback_callers_are_on_this_machine() {
        assert!(local("127.0.0.1", None, false, &[]));
        assert!(local("::1", None, false, &[]));
        assert!(local("::ffff:127.0.0.1", None, false, &[]));
        assert!(!local("10.244.1.2", None, false, &["10.244.0.0/16"]));
        assert!(!local("203.0.113.9", None, false, &[]));
        // Forwarded by a proxy the node does not trust (a sidecar): not local.
        assert!(!local("127.0.0.1", Some("127.0.0.1"), false, &[]));
        assert!(!local("127.0.0.6", Some("203.0.113.9"), false, &[]));
        // A trusted local proxy forwarding a local client (a router beside the node).
        assert!(local("127.0.0.1", Some("127.0.0.1"), false, &["127.0.0.1"]));
        let router = ["127.0.0.1"];
        assert!(local("::ffff:127.0.0.1", Some("127.0.0.1"), false, &router));
        assert!(local("127.0.0.1", Some("::ffff:127.0.0.1"), false, &router));
        // ... but not a client elsewhere, a trusted pod, or a hop it cannot read.
        let trusted = ["127.0.0.0/8", "10.244.0.0/16"];
        assert!(!local("127.0.0.1", Some("203.0.113.9"), false, &trusted));
        assert!(!local(
            "::ffff:127.0.0.1",
            Some("203.0.113.9"),
            false,
            &trusted
        ));
        assert!(!local("127.0.0.1", Some("10.244.3.4"), false, &trusted));
        assert!(!local(
            "127.0.0.1",
            Some("127.0.0.1, 10.244.3.4"),
            false,
            &trusted
        ));
        assert!(!local("127.0.0.1", Some("unknown"), false, &trusted));
        assert!(!local("127.0.0.1", Some(""), false, &trusted));
        // Another forwarding header: a proxy is in front that says so another way.
        assert!(!local("127.0.0.1", None, true, &trusted));
    }
}
