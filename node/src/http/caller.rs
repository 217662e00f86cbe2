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
/// address, and carries no forwarding header unless it comes from a trusted proxy, whose
/// forwarded client is on loopback too. A pod of the cluster connecting directly, a router
/// elsewhere, or an untrusted local proxy that forwards others (a sidecar) is not.
#[derive(Debug, Clone, Copy)]
pub struct OnThisMachine(pub bool);

impl OnThisMachine {
    pub fn of(
        peer: std::net::IpAddr,
        client: std::net::IpAddr,
        forwarded: bool,
        trusted: &[crate::limits::Network],
    ) -> Self {
        let peer = peer.to_canonical();
        let from_trusted = trusted.iter().any(|n| n.contains(&peer));
        Self(
            peer.is_loopback()
                && client.to_canonical().is_loopback()
                && (!forwarded || from_trusted),
        )
    }
}

/// Whether the caller of a request is on the node's own machine ([`OnThisMachine`]).
pub fn on_this_machine(req: &Request<Incoming>) -> bool {
    req.extensions().get::<OnThisMachine>().is_some_and(|o| o.0)
}

/// The client address of a request.
pub fn client_addr(req: &Request<Incoming>) -> std::net::IpAddr {
    req.extensions()
        .get::<ClientAddr>()
        .map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| a.0)
}
