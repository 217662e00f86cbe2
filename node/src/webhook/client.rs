//! One webhook request: resolve, check the address, connect (TLS for https), POST the
//! signed message, and judge the answer by its status alone. Redirects are not
//! followed: a message goes only to the URL its endpoint names.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::sign::{secret_key, signature};
use super::target::{self, Target};
use crate::store::WebhookMessage;

/// Why a try failed; every kind is retried (a later try may find the endpoint healthy,
/// its DNS changed, its secret fixed).
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("bad endpoint: {0}")]
    Endpoint(&'static str),
    #[error("refused: {0} resolves only to internal addresses")]
    Internal(String),
    #[error("cannot resolve {0}")]
    Resolve(String),
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("HTTP: {0}")]
    Http(String),
    #[error("answered {0}")]
    Status(u16),
    #[error("no answer within the timeout")]
    Timeout,
}

/// What sends requests: the TLS setup and the address rule.
#[derive(Clone)]
pub struct Client {
    tls: tokio_rustls::TlsConnector,
    block_private: bool,
    timeout: Duration,
}

impl Client {
    pub fn new(block_private: bool, timeout: Duration) -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Self {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            block_private,
            timeout,
        }
    }

    /// Sends one message, signed at `now_s` (Unix seconds); `Ok` on a 2xx answer.
    pub async fn send(&self, msg: &WebhookMessage, now_s: i64) -> Result<u16, SendError> {
        match tokio::time::timeout(self.timeout, self.try_send(msg, now_s)).await {
            Ok(result) => result,
            Err(_) => Err(SendError::Timeout),
        }
    }

    async fn try_send(&self, msg: &WebhookMessage, now_s: i64) -> Result<u16, SendError> {
        let target = target::parse(&msg.url).map_err(SendError::Endpoint)?;
        let key = secret_key(&msg.secret).map_err(SendError::Endpoint)?;
        let stream = self.connect(&target).await?;
        let req = hyper::Request::post(target.path.as_str())
            .header(hyper::header::HOST, target.host_header())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::USER_AGENT, "Atrium-Webhooks/1")
            .header("webhook-id", msg.msg_id.as_str())
            .header("webhook-timestamp", now_s.to_string())
            .header(
                "webhook-signature",
                signature(&key, &msg.msg_id, now_s, &msg.body),
            )
            .body(Full::new(Bytes::from(msg.body.clone())))
            .map_err(|e| SendError::Http(e.to_string()))?;
        let status = if target.https {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| SendError::Tls(e.to_string()))?;
            let tls = self
                .tls
                .connect(name, stream)
                .await
                .map_err(|e| SendError::Tls(e.to_string()))?;
            post(TokioIo::new(tls), req).await?
        } else {
            post(TokioIo::new(stream), req).await?
        };
        if (200..300).contains(&status) {
            Ok(status)
        } else {
            Err(SendError::Status(status))
        }
    }

    /// Connects to the first address of the host this node may reach.
    async fn connect(&self, target: &Target) -> Result<TcpStream, SendError> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((target.host.as_str(), target.port))
            .await
            .map_err(|_| SendError::Resolve(target.host.clone()))?
            .collect();
        let allowed: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| !self.block_private || target::is_public(a.ip()))
            .collect();
        if allowed.is_empty() {
            return Err(if addrs.is_empty() {
                SendError::Resolve(target.host.clone())
            } else {
                SendError::Internal(target.host.clone())
            });
        }
        let mut last = String::new();
        for addr in allowed {
            match TcpStream::connect(addr).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(SendError::Connect(last))
    }
}

async fn post<T>(io: T, req: hyper::Request<Full<Bytes>>) -> Result<u16, SendError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| SendError::Http(e.to_string()))?;
    let conn = tokio::spawn(conn);
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| SendError::Http(e.to_string()))?;
    // The body is not read: only the status counts, and the connection is not reused.
    let status = resp.status().as_u16();
    drop(resp);
    drop(sender);
    conn.abort();
    Ok(status)
}
