//! A node's `409 moved`: the file is another node's now. A request that can be sent again is
//! retried once, to the holder the coordinator names; otherwise the answer goes to the client
//! and the router learns the holder from its body.

use bytes::{Bytes, BytesMut};
use pingora::prelude::*;
use pingora::proxy::Session;
use pingora::{Error, ErrorType};

use atrium_coordinator::NodeId;

use super::{Ctx, Router};
use crate::route::Route;

/// The most of a `409 moved` body the router reads to learn the holder.
const MOVED_BODY_MAX: usize = 4096;

impl Router {
    /// On a `409` response header: asks for a retry, or starts reading the body.
    pub(super) fn moved(&self, session: &Session, ctx: &mut Ctx) -> Result<()> {
        let Route::File(_) = ctx.route else {
            return Ok(());
        };
        self.metrics.moved.inc();
        let method = &session.req_header().method;
        let bodiless =
            (method == http::Method::GET || method == http::Method::HEAD) && !ctx.upgrade;
        if bodiless && !ctx.moved_retry {
            // Send it once more, to the holder the coordinator names.
            ctx.moved_retry = true;
            let mut e = Error::explain(ErrorType::HTTPStatus(409), "moved: retrying");
            e.set_retry(true);
            return Err(e);
        }
        ctx.moved_body = Some(BytesMut::new());
        Ok(())
    }

    /// Collects a `409 moved` body, if one is being read, and learns its holder at the end.
    pub(super) fn read_moved_body(&self, body: Option<&Bytes>, end_of_stream: bool, ctx: &mut Ctx) {
        let Some(buf) = ctx.moved_body.as_mut() else {
            return;
        };
        if let Some(chunk) = body {
            if buf.len() + chunk.len() <= MOVED_BODY_MAX {
                buf.extend_from_slice(chunk);
            }
        }
        if end_of_stream {
            if let (Some(node), Route::File(file)) = (moved_to(buf), &ctx.route) {
                self.fleet.set_holder(file, Some(node));
            }
            ctx.moved_body = None;
        }
    }
}

/// The node a `409 moved` body names.
fn moved_to(body: &[u8]) -> Option<NodeId> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    if v["error"]["code"] != "moved" {
        return None;
    }
    NodeId::parse(v["error"]["node"].as_str()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_moved_body_names_the_holder() {
        let body = br#"{"error":{"code":"moved","message":"elsewhere","node":"n2"}}"#;
        assert_eq!(moved_to(body), NodeId::parse("n2").ok());
        assert_eq!(moved_to(br#"{"error":{"code":"conflict"}}"#), None);
        assert_eq!(moved_to(b"not json"), None);
        assert_eq!(
            moved_to(br#"{"error":{"code":"moved","node":"a b"}}"#),
            None
        );
    }
}
