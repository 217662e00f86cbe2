//! Request bodies: read within their size limit and deadline, parsed as JSON, and
//! their names checked as plain text.

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::de::DeserializeOwned;

use super::error::{body_timeout, busy};
use super::ApiError;
use crate::memory::Reservation;
use crate::state::AppState;

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

/// A body may come in one frame (a chunk, or a read) for every this many bytes it holds on
/// average, and [`FREE_FRAMES`] more: a request of one-byte chunks made the node keep a piece
/// of its read buffer for each (2.3 MiB for 64 KB of body, 7.5 MiB through a router) and parse
/// them at 6 bytes on the wire for one of body.
const BYTES_PER_FRAME: usize = 16;
const FREE_FRAMES: usize = 64;

/// The request's body, at most `limit` bytes, by its deadline.
pub async fn read_body(req: Request<Incoming>, limit: usize) -> Result<Bytes, ApiError> {
    let deadline = req.extensions().get::<BodyDeadline>().copied();
    let mut body = Limited::new(req.into_body(), limit);
    let mut bytes = BytesMut::new();
    let read = read_frames(&mut body, |data| {
        bytes.extend_from_slice(data);
        Ok(())
    });
    by_deadline(deadline, read).await??;
    Ok(bytes.freeze())
}

/// Reads `body` frame by frame, handing each frame's data to `take` (which copies it: a
/// frame kept as it came holds on to the read buffer it was cut from), and refuses a body
/// that comes in many more frames than its size needs (400).
async fn read_frames(
    body: &mut Limited<Incoming>,
    mut take: impl FnMut(&[u8]) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let (mut frames, mut len) = (0usize, 0usize);
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(unreadable)?.into_data() else {
            continue;
        };
        frames += 1;
        len += data.len();
        if frames > len / BYTES_PER_FRAME + FREE_FRAMES {
            return Err(ApiError::bad_request(
                "the body came in too many small pieces",
            ));
        }
        take(&data)?;
    }
    Ok(())
}

/// The request's body as [`read_body`] reads it, its bytes promised from the node's memory
/// budget as they arrive (twice over: the buffer grows by doubling). A body that is
/// declared and never sent holds nothing: promised up front from its `Content-Length`, one
/// header saying 64 MiB held five times that of the budget for the body's whole deadline,
/// and four such requests from one free account kept the node refusing everyone (the eleventh
/// review). Past the budget: 503 with `Retry-After`, as any work refused for memory.
pub async fn read_body_promised(
    req: Request<Incoming>,
    limit: usize,
    state: &AppState,
) -> Result<(Bytes, Reservation), ApiError> {
    let node_full = || {
        state.metrics.memory_refusals.inc();
        busy("the node is at its memory budget; try again shortly")
    };
    let deadline = req.extensions().get::<BodyDeadline>().copied();
    let mut promised = state.memory.reserve(0).ok_or_else(node_full)?;
    let mut body = Limited::new(req.into_body(), limit);
    let mut bytes = BytesMut::new();
    let read = read_frames(&mut body, |data| {
        if !promised.grow_to(2 * (bytes.len() + data.len()) as u64) {
            return Err(node_full());
        }
        bytes.extend_from_slice(data);
        Ok(())
    });
    by_deadline(deadline, read).await??;
    Ok((bytes.freeze(), promised))
}

/// `work` by the body's deadline, when it has one.
async fn by_deadline<T>(
    deadline: Option<BodyDeadline>,
    work: impl std::future::Future<Output = T>,
) -> Result<T, ApiError> {
    match deadline {
        Some(BodyDeadline(at)) => tokio::time::timeout_at(at, work)
            .await
            .map_err(|_| body_timeout()),
        None => Ok(work.await),
    }
}

/// Why a body could not be read: over its limit (413), or cut off (400).
fn unreadable(e: Box<dyn std::error::Error + Send + Sync>) -> ApiError {
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
    let seen = |c: char| !c.is_whitespace() && !crate::protocol::is_shaping(c);
    if name.chars().count() > max_chars || name.chars().any(hidden) || !name.chars().any(seen) {
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
            // Found by the eleventh review: separators, blanks, invisible operators, annotations.
            "Alice\u{2028}(owner)",
            "\u{2800}",
            "Al\u{00AD}ice",
            "a\u{2062}b",
            "\u{FFF9}Alice\u{FFFA}Bob\u{FFFB}",
            "x\u{1D173}",
            // Shaping characters alone are blank.
            "\u{200D}\u{FE0F}",
            "\u{E0067}\u{E007F}",
        ] {
            let refused = plain_name(hidden, 64, refusal);
            assert!(
                matches!(refused, Err(ref e) if e.status == 400),
                "{hidden:?}"
            );
        }
    }
}
