//! Request bodies: read within their size limit and deadline, parsed as JSON, and
//! their names checked as plain text.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::de::DeserializeOwned;

use super::error::body_timeout;
use super::ApiError;

/// When a request's body must have arrived in full (`ATRIUM_BODY_TIMEOUT_MS` after
/// its headers).
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadline(pub tokio::time::Instant);

/// Reads a JSON body of at most `limit` bytes into `T`, by the request's
/// [`BodyDeadline`].
pub async fn read_json<T: DeserializeOwned>(
    req: Request<Incoming>,
    limit: usize,
) -> Result<T, ApiError> {
    parse_json(&read_body(req, limit).await?)
}

/// The request's body, at most `limit` bytes, by its deadline.
pub async fn read_body(req: Request<Incoming>, limit: usize) -> Result<Bytes, ApiError> {
    let deadline = req.extensions().get::<BodyDeadline>().copied();
    let collect = Limited::new(req.into_body(), limit).collect();
    let collected = match deadline {
        Some(BodyDeadline(at)) => tokio::time::timeout_at(at, collect)
            .await
            .map_err(|_| body_timeout())?,
        None => collect.await,
    };
    let bytes = collected
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too-large",
                    "the body is too large",
                )
            } else {
                ApiError::bad_request("the body could not be read")
            }
        })?
        .to_bytes();
    Ok(bytes)
}

/// A body read as JSON (an empty body as `{}`).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes = if bytes.is_empty() { b"{}" } else { bytes };
    // A fixed sentence: the parser's own text (types, positions, field names of
    // our structs) is no business of the caller's.
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(match e.classify() {
            serde_json::error::Category::Data => {
                "the body is JSON but does not have the fields this route takes, \
                 with their types (see /api/openapi.yaml)"
            }
            _ => "the body is not valid JSON",
        })
    })
}

/// A name from a body (a person's, a file's), trimmed, when it has 1 to `max_chars`
/// characters and no control characters; `refusal` is the 400's sentence otherwise.
pub fn plain_name<'a>(name: &'a str, max_chars: usize, refusal: &str) -> Result<&'a str, ApiError> {
    let name = name.trim();
    // Nothing that prints as nothing either (bidi overrides, zero-width characters): a name
    // must not be able to look like another, as guest names cannot.
    let hidden = |c: char| c.is_control() || crate::protocol::is_deceptive(c);
    if name.is_empty() || name.chars().count() > max_chars || name.chars().any(hidden) {
        return Err(ApiError::bad_request(refusal));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::plain_name;

    #[test]
    fn a_plain_name_holds_nothing_that_prints_as_nothing() {
        let refusal = "a name has 1 to 64 plain characters";
        assert_eq!(plain_name("  名前 é  ", 64, refusal).ok(), Some("名前 é"));
        // Joiners and tags stay: Persian and Indic spelling, emoji sequences.
        for kept in [
            "می\u{200C}خواهم",
            "👨\u{200D}👩\u{200D}👧",
            "🏴\u{E0067}\u{E0062}\u{E007F}",
        ] {
            assert_eq!(plain_name(kept, 64, refusal).ok(), Some(kept));
        }
        for hidden in [
            "\u{202E}renwO",
            "Ow\u{200B}ner",
            "\u{2066}x\u{2069}",
            "a\u{FEFF}",
            "a\nb",
        ] {
            let refused = plain_name(hidden, 64, refusal);
            assert!(
                matches!(refused, Err(ref e) if e.status == 400),
                "{hidden:?}"
            );
        }
    }
}
