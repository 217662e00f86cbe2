//! Requests a second per client address (`ATRIUM_REQUESTS_PER_IP_PER_SECOND`): a
//! request costs the node its parsing, a task and usually a store lookup, so one address
//! sending them as fast as it can would take the node's cores from everyone else.
//!
//! Most requests take one turn of the address's rate. Two kinds have a limit of their own
//! and take a turn only when they turn out not to be what they claim:
//! - a socket upgrade is paced by `ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND`; one that is
//!   not upgraded (a bad handshake, a refusal) takes a turn;
//! - the server API is limited per API key (`ATRIUM_SERVER_API_PER_SECOND`), since an
//!   app's backend sends many requests from one address: a request under `/api/server/`,
//!   or carrying an API key anywhere, takes a turn only when its key is not accepted
//!   (none, a bad one, one without the route's scope, any unknown route).
//!
//! An address over its rate waits for its turn (its connection reads nothing meanwhile),
//! so a flood is held to the rate whatever its connections send; a turn more than two
//! seconds away is refused 429, but only after those two seconds, so refusals cannot be
//! drawn faster than turns.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, StatusCode};

use super::app::KEY_PREFIX;
use super::{bearer_token, rate_limited, ApiError};
use crate::state::AppState;

/// The longest a request waits for its address's turn; further away, it is refused
/// after waiting this long.
const MAX_WAIT: Duration = Duration::from_secs(2);

/// Set once a request's API key is accepted (`http::app::api_key`).
#[derive(Clone, Default)]
pub struct KeyAccepted(Arc<AtomicBool>);

impl KeyAccepted {
    /// Marks the request's key accepted (a no-op for a request that was not counted as
    /// keyed).
    pub fn mark(req: &Request<Incoming>) {
        if let Some(accepted) = req.extensions().get::<KeyAccepted>() {
            accepted.0.store(true, Ordering::Relaxed);
        }
    }
}

/// How a request is counted against its address.
#[derive(Clone)]
pub(super) enum Counted {
    /// A socket upgrade: paced by its own limit once it is one.
    Upgrade,
    /// The server API, or any request with an API key: limited by its key once the key
    /// is accepted.
    Keyed(KeyAccepted),
    /// One turn of the address's rate.
    Request,
}

impl Counted {
    /// How `req` is counted: by its path, and by whether it carries an API key (the
    /// server API's routes under `/api/files/{id}/...`, webhooks and revocations take one
    /// too). A request that may be keyed is given the flag its handler marks once the key
    /// is accepted.
    pub(super) fn of(req: &mut Request<Incoming>) -> Self {
        let keyed = bearer_token(req).is_some_and(|t| t.starts_with(KEY_PREFIX));
        let counted = match Self::of_path(req.uri().path()) {
            Counted::Request if keyed => Counted::Keyed(KeyAccepted::default()),
            other => other,
        };
        if let Counted::Keyed(accepted) = &counted {
            req.extensions_mut().insert(accepted.clone());
        }
        counted
    }

    fn of_path(path: &str) -> Self {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match segments.as_slice() {
            ["files", _, "ws"] => Counted::Upgrade,
            ["api", "server", ..] => Counted::Keyed(KeyAccepted::default()),
            _ => Counted::Request,
        }
    }

    /// Before the request is routed: waits for the address's turn, or refuses it (after
    /// [`MAX_WAIT`]) when the turn is further away. Upgrades and the server API only wait
    /// while their address owes turns; they take one once answered (see [`Self::answered`]).
    pub(super) async fn admit(&self, state: &AppState, address: IpAddr) -> Result<(), ApiError> {
        if state.config.requests_per_ip_per_second == 0 {
            return Ok(());
        }
        let limiter = &state.requests_by_address;
        let turn = match self {
            Counted::Request => limiter.reserve(&address, MAX_WAIT),
            Counted::Upgrade | Counted::Keyed(_) => match limiter.ready(&address) {
                Ok(()) => Ok(Duration::ZERO),
                Err(wait) if wait <= MAX_WAIT => Ok(wait),
                Err(wait) => Err(wait),
            },
        };
        match turn {
            Ok(wait) if wait.is_zero() => Ok(()),
            Ok(wait) => {
                state.metrics.requests_paced.inc();
                tokio::time::sleep(wait).await;
                Ok(())
            }
            Err(wait) => {
                tokio::time::sleep(MAX_WAIT).await;
                Err(rate_limited(
                    "too many requests from this address; wait a little and try again",
                    wait.saturating_sub(MAX_WAIT),
                ))
            }
        }
    }

    /// After the answer: an upgrade that was not upgraded, or a keyed request whose key
    /// was not accepted, takes a turn.
    pub(super) fn answered(&self, state: &AppState, address: IpAddr, status: StatusCode) {
        let counts = match self {
            Counted::Request => false,
            Counted::Upgrade => status != StatusCode::SWITCHING_PROTOCOLS,
            Counted::Keyed(accepted) => !accepted.0.load(Ordering::Relaxed),
        };
        if counts && state.config.requests_per_ip_per_second > 0 {
            state.requests_by_address.charge(&address, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Counted;

    fn counted(path: &str) -> &'static str {
        match Counted::of_path(path) {
            Counted::Upgrade => "upgrade",
            Counted::Keyed(_) => "server",
            Counted::Request => "request",
        }
    }

    #[test]
    fn requests_are_counted_by_their_path() {
        assert_eq!(counted("/files/abc/ws"), "upgrade");
        assert_eq!(counted("/api/server/files"), "server");
        assert_eq!(counted("/api/server/files/x/patches"), "server");
        for path in [
            "/",
            "/health",
            "/api/files/abc",
            "/files/abc/ws/x",
            "/api/serverx",
        ] {
            assert_eq!(counted(path), "request", "{path}");
        }
    }
}
