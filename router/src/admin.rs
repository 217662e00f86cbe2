//! The admin port: `/health` and `/metrics` of the router itself.

use std::sync::Arc;

use async_trait::async_trait;
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;

use crate::fleet::Fleet;
use crate::metrics::Metrics;
use crate::sockets::Tracker;

/// Answers the admin routes.
pub struct Admin {
    pub fleet: Arc<Fleet>,
    pub metrics: Arc<Metrics>,
    pub tracker: Arc<Tracker>,
}

fn response(status: u16, content_type: &str, body: Vec<u8>) -> http::Response<Vec<u8>> {
    http::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("content-length", body.len())
        .header("cache-control", "no-store")
        .body(body)
        .expect("a valid response")
}

#[async_trait]
impl ServeHttp for Admin {
    async fn response(&self, session: &mut ServerSession) -> http::Response<Vec<u8>> {
        match session.req_header().uri.path() {
            "/health" => {
                let body = serde_json::json!({
                    "status": "ok",
                    "members": self.fleet.live_count(),
                    "ring": self.fleet.ring_size(),
                    "sockets": self.tracker.sockets(),
                    "requests": self.tracker.requests(),
                });
                response(200, "application/json", body.to_string().into_bytes())
            }
            "/metrics" => response(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                self.metrics.render(),
            ),
            _ => {
                let body =
                    serde_json::json!({"error": {"code": "not-found", "message": "no such route"}});
                response(404, "application/json", body.to_string().into_bytes())
            }
        }
    }
}
