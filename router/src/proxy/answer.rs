//! The router's own answers: requests it refuses before any routing, and requests no node
//! could take.

use bytes::Bytes;
use pingora::http::ResponseHeader;
use pingora::proxy::{FailToProxy, Session};
use pingora::{Error, ErrorSource, ErrorType};

use super::upgrade::upgrade_failure;
use super::{Ctx, Router};
use crate::route::Route;

/// How the router answers a route it refuses itself.
struct Refusal {
    /// The `refused` metric's label.
    reason: &'static str,
    status: u16,
    code: &'static str,
    message: &'static str,
}

/// The router's answer to `route`, when no node may see it.
fn refusal(route: &Route) -> Option<Refusal> {
    let (reason, status, code, message) = match route {
        Route::Blocked => ("blocked", 404, "not-found", "no such route"),
        Route::BadId => (
            "bad-id",
            400,
            "bad-request",
            "file ids are 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
        ),
        Route::BadPath => (
            "bad-path",
            400,
            "bad-request",
            "the path is not in canonical form: no empty, `.` or `..` segments, \
             no percent-encoded letters, digits or -._~",
        ),
        Route::File(_) | Route::Any => return None,
    };
    Some(Refusal {
        reason,
        status,
        code,
        message,
    })
}

/// The status the client gets for a failed request; 0 when the client's side is gone.
fn status_of(e: &Error) -> u16 {
    match e.etype() {
        ErrorType::HTTPStatus(code) => *code,
        _ => match e.esource() {
            ErrorSource::Upstream => 502,
            ErrorSource::Downstream => match e.etype() {
                ErrorType::WriteError | ErrorType::ReadError | ErrorType::ConnectionClosed => 0,
                _ => 400,
            },
            ErrorSource::Internal | ErrorSource::Unset => 500,
        },
    }
}

/// The error code and message of a failure status.
fn failure_answer(status: u16) -> (&'static str, &'static str) {
    match status {
        503 => ("unavailable", "no node can take this request now; retry"),
        504 => ("timeout", "the node did not answer in time"),
        400 => ("bad-request", "the request could not be read"),
        500 => ("internal", "the router failed"),
        _ => ("bad-gateway", "the node could not be reached; retry"),
    }
}

impl Router {
    /// A JSON error answer, as the nodes give theirs.
    async fn respond_json(session: &mut Session, status: u16, code: &str, message: &str) {
        let body = serde_json::json!({"error": {"code": code, "message": message}}).to_string();
        let Ok(mut header) = ResponseHeader::build(status, Some(2)) else {
            return;
        };
        let _ = header.insert_header("content-type", "application/json");
        let _ = header.insert_header("content-length", body.len().to_string());
        if session
            .write_response_header(Box::new(header), false)
            .await
            .is_ok()
        {
            let _ = session
                .write_response_body(Some(Bytes::from(body)), true)
                .await;
        }
    }

    /// Answers a route no node may see; returns whether it did.
    pub(super) async fn refuse(&self, session: &mut Session, route: &Route) -> bool {
        let Some(r) = refusal(route) else {
            return false;
        };
        self.metrics.refused.with_label_values(&[r.reason]).inc();
        Self::respond_json(session, r.status, r.code, r.message).await;
        true
    }

    /// Answers a request that could not be proxied (unless an answer went out already).
    pub(super) async fn fail(&self, session: &mut Session, e: &Error, ctx: &Ctx) -> FailToProxy {
        let code = status_of(e);
        if ctx.upgrade && session.response_written().is_none() {
            self.upgrade_failed(ctx, upgrade_failure(e, ctx.chosen.is_some()));
        }
        if code > 0 && session.response_written().is_none() {
            let (name, message) = failure_answer(code);
            tracing::debug!(error = %e, node = %ctx.node_label(), code, "proxy failed");
            Self::respond_json(session, code, name, message).await;
        }
        FailToProxy {
            error_code: code,
            can_reuse_downstream: false,
        }
    }
}
