//! Errors as the contract shapes them: a status, a kebab-case code and a sentence,
//! sent as a JSON body.

use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use serde_json::json;

use super::{json_response, Body};
use crate::store::StoreError;

/// An error as the contract shapes it: a status, a kebab-case code and a sentence.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// For `moved`: the node that owns the file.
    pub node: Option<String>,
    /// Seconds for a `Retry-After` header (429 and 503 answers).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            node: None,
            retry_after: None,
        }
    }

    /// 409 `moved`: another node serves this file; the router sends requests there.
    pub fn moved(node: &atrium_coordinator::NodeId) -> Self {
        Self {
            node: Some(node.to_string()),
            ..Self::new(
                StatusCode::CONFLICT,
                "moved",
                "another node serves this file; go through the router",
            )
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "sign in, or present a link key",
        )
    }

    pub fn forbidden() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "you have no access to this",
        )
    }

    /// 409 `file-exists`: the file id asked for is taken.
    pub fn file_exists() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "file-exists",
            "a file with this id exists",
        )
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "no such thing here")
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }
}

/// History work refused: its places taken (429 with `Retry-After: 1`), or no turn or no
/// memory for it (503 with `Retry-After`).
impl From<crate::history::turns::WorkRefused> for ApiError {
    fn from(e: crate::history::turns::WorkRefused) -> Self {
        use crate::history::turns::WorkRefused;
        match e {
            WorkRefused::Places(_) => {
                rate_limited(&e.to_string(), std::time::Duration::from_secs(1))
            }
            WorkRefused::NoTurn | WorkRefused::NoRoom => busy(e.to_string()),
            WorkRefused::Storage(e) => e.into(),
            WorkRefused::Store(e) => e.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::not_found(),
            StoreError::Conflict => {
                ApiError::new(StatusCode::CONFLICT, "conflict", "that already exists")
            }
            StoreError::Full => ApiError::new(
                StatusCode::FORBIDDEN,
                "too-many-files",
                "the account owns as many files as it may; delete some to make new ones",
            ),
            StoreError::Fenced | StoreError::Unavailable(_) => {
                tracing::warn!(error = %e, "store error answering a request");
                ApiError::unavailable("the store is unavailable; try again")
            }
        }
    }
}

impl From<crate::storage::StorageError> for ApiError {
    fn from(e: crate::storage::StorageError) -> Self {
        match e {
            crate::storage::StorageError::Full => {
                ApiError::new(StatusCode::FORBIDDEN, "storage-full", crate::storage::FULL)
            }
            crate::storage::StorageError::LinkShareFull => ApiError::new(
                StatusCode::FORBIDDEN,
                "storage-full",
                crate::storage::LINK_SHARE_FULL,
            ),
            crate::storage::StorageError::Store(e) => e.into(),
        }
    }
}

pub(super) fn error_response(e: &ApiError) -> Response<Body> {
    let mut error = json!({"code": e.code, "message": e.message});
    if let Some(node) = &e.node {
        error["node"] = json!(node);
    }
    let mut resp = json_response(e.status, &json!({ "error": error }));
    if let Some(seconds) = e.retry_after {
        resp.headers_mut()
            .insert(hyper::header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    resp
}

/// 503 `unavailable` with `Retry-After`: the node is at a bound it will be under again soon.
pub fn busy(message: impl Into<String>) -> ApiError {
    ApiError {
        retry_after: Some(2),
        ..ApiError::unavailable(message)
    }
}

/// 429 `rate-limited`, with `Retry-After` saying when to come back.
pub fn rate_limited(message: &str, wait: std::time::Duration) -> ApiError {
    ApiError {
        retry_after: Some(wait.as_secs_f64().ceil().clamp(1.0, 3600.0) as u32),
        ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate-limited", message)
    }
}

/// 408 `timeout`: the body did not arrive in time (the connection is closed).
pub(super) fn body_timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "timeout",
        "the request body did not arrive in time",
    )
}

pub(super) fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "that method is not allowed here",
    )
}
