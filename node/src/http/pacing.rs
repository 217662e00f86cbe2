//! Requests a second per client address (`ATRIUM_REQUESTS_PER_IP_PER_SECOND`): a
//! request costs the node its parsing, a task and usually a store lookup, so one address
//! sending them as fast as it can would take the node's cores from everyone else.
//!
//! Three kinds of request count differently:
//! - socket upgrades have their own pace (`ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND`), which
//!   makes them wait rather than refusing them, and are not counted here;
//! - the server API is limited per API key (`ATRIUM_SERVER_API_PER_SECOND`), since an
//!   app's backend sends many requests from one address: only its requests whose key is
//!   refused (401, 403) count against the address, so guessing keys is paced like
//!   anything else;
//! - everything else takes one request of the address's rate: waiting for it up to two
//!   seconds (the connection reads nothing meanwhile, so a flood is held to the rate
//!   times the address's connections), or answered 429 when it is further away.

use std::net::IpAddr;
use std::time::Duration;

use hyper::StatusCode;

use super::{rate_limited, ApiError};
use crate::state::AppState;

/// The longest a request waits for its address's turn before it is refused.
const MAX_WAIT: Duration = Duration::from_secs(2);

/// How a request is counted against its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Counted {
    /// A socket upgrade: paced by its own limit.
    Upgrade,
    /// The server API: only its refused keys count.
    ServerApi,
    /// One request of the address's rate.
    Request,
}

impl Counted {
    pub(super) fn of(path: &str) -> Self {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match segments.as_slice() {
            ["files", _, "ws"] => Counted::Upgrade,
            ["api", "server", ..] => Counted::ServerApi,
            _ => Counted::Request,
        }
    }

    /// Before the request is routed: waits the address's turn when it is at most
    /// [`MAX_WAIT`] away, so a client that sends too fast is slowed (its connection does
    /// nothing meanwhile) instead of being answered at once and sending again; further
    /// away, `Err` (429 with how long until a turn is free).
    pub(super) async fn admit(self, state: &AppState, address: IpAddr) -> Result<(), ApiError> {
        let limiter = &state.requests_by_address;
        if self == Counted::Upgrade || state.config.requests_per_ip_per_second == 0 {
            return Ok(());
        }
        let turn = match self {
            Counted::ServerApi => match limiter.ready(&address) {
                Err(wait) if wait > MAX_WAIT => Err(wait),
                Err(wait) => Ok(wait),
                Ok(()) => Ok(Duration::ZERO),
            },
            _ => limiter
                .reserve(&address, MAX_WAIT)
                .map_err(|wait| wait.saturating_sub(MAX_WAIT)),
        };
        match turn {
            Ok(wait) if wait.is_zero() => Ok(()),
            Ok(wait) => {
                state.metrics.requests_paced.inc();
                tokio::time::sleep(wait).await;
                Ok(())
            }
            Err(wait) => Err(rate_limited(
                "too many requests from this address; wait a little and try again",
                wait,
            )),
        }
    }

    /// After the answer: a server API request whose key was refused is charged.
    pub(super) fn answered(self, state: &AppState, address: IpAddr, status: StatusCode) {
        let refused = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
        if self == Counted::ServerApi && refused {
            state.requests_by_address.charge(&address, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Counted;

    #[test]
    fn requests_are_counted_by_their_path() {
        assert_eq!(Counted::of("/files/abc/ws"), Counted::Upgrade);
        assert_eq!(Counted::of("/api/server/files"), Counted::ServerApi);
        assert_eq!(
            Counted::of("/api/server/files/x/patches"),
            Counted::ServerApi
        );
        for path in [
            "/",
            "/health",
            "/api/files/abc",
            "/files/abc/ws/x",
            "/api/serverx",
        ] {
            assert_eq!(Counted::of(path), Counted::Request, "{path}");
        }
    }
}
