//! One webhook request: on a kept connection to the endpoint's host, or on a new one
//! (resolve, check the address, connect, TLS for https); POST the signed message, and
//! judge the answer by its status alone. Redirects are not followed: a message goes only
//! to the URL its endpoint names.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use prometheus::IntCounter;
use tokio::net::TcpStream;

use super::pool::{Connection, Origin, Pool};
use super::sign::{secret_key, signature};
use super::target::{self, Target};
use crate::store::WebhookMessage;

/// Most of an answer's body read so that its connection can carry the next message, and
/// the longest it is waited for; a longer or slower body closes the connection instead.
const BODY_KEPT: usize = 16 * 1024;
const BODY_WAIT: Duration = Duration::from_secs(1);

/// The most a connection buffers of an answer at once: a kept connection keeps its buffer,
/// and a receiver's long head must not grow it (hyper's default allows about 400 KiB).
const READ_BUFFER: usize = 64 * 1024;

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

/// What sends requests: the TLS setup, the address rule and the kept connections.
#[derive(Clone)]
pub struct Client {
    tls: tokio_rustls::TlsConnector,
    block_private: bool,
    timeout: Duration,
    pool: Arc<Pool>,
    opened: IntCounter,
}

/// An answer whose status is known, and what is needed to keep its connection.
struct Answer {
    status: u16,
    origin: Origin,
    conn: Connection,
    body: Incoming,
    closing: bool,
}

impl Client {
    /// `keep` connections idle at most, to any hosts; `per_host` to one. `opened` counts the
    /// connections made.
    pub fn new(
        block_private: bool,
        timeout: Duration,
        (per_host, keep): (usize, usize),
        opened: IntCounter,
    ) -> Self {
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
            pool: Arc::new(Pool::new(per_host, keep)),
            opened,
        }
    }

    /// Sends one message, signed at `now_s` (Unix seconds); `Ok` on a 2xx answer. The
    /// connection is kept for the next message when its answer's body is short.
    pub async fn send(&self, msg: &WebhookMessage, now_s: i64) -> Result<u16, SendError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let answer = match tokio::time::timeout_at(deadline, self.try_send(msg, now_s)).await {
            Ok(answer) => answer?,
            Err(_) => return Err(SendError::Timeout),
        };
        let status = answer.status;
        // Within the try's time, so a try never takes longer than its timeout.
        let drain_by = deadline.min(tokio::time::Instant::now() + BODY_WAIT);
        if !answer.closing && drained(answer.body, drain_by).await {
            self.pool.give_back(answer.origin, answer.conn);
        }
        if (200..300).contains(&status) {
            Ok(status)
        } else {
            Err(SendError::Status(status))
        }
    }

    /// Closes connections idle too long.
    pub fn expire_idle(&self) {
        self.pool.expire();
    }

    async fn try_send(&self, msg: &WebhookMessage, now_s: i64) -> Result<Answer, SendError> {
        let target = target::parse(&msg.url).map_err(SendError::Endpoint)?;
        let key = secret_key(&msg.secret).map_err(SendError::Endpoint)?;
        // Signed and copied once; a second attempt on a new connection sends the same.
        let signed = signature(&key, &msg.msg_id, now_s, &msg.body);
        let body = Bytes::from(msg.body.clone());
        let request = || {
            hyper::Request::post(target.path.as_str())
                .header(hyper::header::HOST, target.host_header())
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .header(hyper::header::USER_AGENT, "Atrium-Webhooks/1")
                .header("webhook-id", msg.msg_id.as_str())
                .header("webhook-timestamp", now_s.to_string())
                .header("webhook-signature", signed.as_str())
                .body(Full::new(body.clone()))
                .map_err(|e| SendError::Http(e.to_string()))
        };
        let origin = Origin {
            https: target.https,
            host: target.host.clone(),
            port: target.port,
        };
        // A kept connection the receiver closed meanwhile fails before any answer: the
        // message then goes on a new one (a receiver that got it twice tells by its id).
        if let Some(conn) = self.pool.take(&origin) {
            if let Ok(answer) = exchange(conn, request()?, &origin).await {
                return Ok(answer);
            }
        }
        let conn = self.open(&target).await?;
        exchange(conn, request()?, &origin).await
    }

    /// A new connection to `target`, TLS included for https.
    async fn open(&self, target: &Target) -> Result<Connection, SendError> {
        let stream = self.connect(target).await?;
        self.opened.inc();
        if target.https {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| SendError::Tls(e.to_string()))?;
            let tls = self
                .tls
                .connect(name, stream)
                .await
                .map_err(|e| SendError::Tls(e.to_string()))?;
            handshake(TokioIo::new(tls)).await
        } else {
            handshake(TokioIo::new(stream)).await
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

async fn handshake<T>(io: T) -> Result<Connection, SendError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(READ_BUFFER)
        .handshake(io)
        .await
        .map_err(|e| SendError::Http(e.to_string()))?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Connection::new(sender, driver))
}

/// Sends `req` on `conn`; the answer's status, with its body still to read.
async fn exchange(
    mut conn: Connection,
    req: hyper::Request<Full<Bytes>>,
    origin: &Origin,
) -> Result<Answer, SendError> {
    let http = |e: hyper::Error| SendError::Http(e.to_string());
    conn.sender.ready().await.map_err(http)?;
    let resp = conn.sender.send_request(req).await.map_err(http)?;
    let closing = resp
        .headers()
        .get(hyper::header::CONNECTION)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
    Ok(Answer {
        status: resp.status().as_u16(),
        origin: origin.clone(),
        conn,
        closing,
        body: resp.into_body(),
    })
}

/// Reads an answer's body to its end, if it ends within [`BODY_KEPT`] bytes and before
/// `by`: only then can its connection carry another message. Its content is not looked at.
async fn drained(mut body: Incoming, by: tokio::time::Instant) -> bool {
    let read_all = async {
        let mut read = 0;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return false };
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > BODY_KEPT {
                return false;
            }
        }
        true
    };
    tokio::time::timeout_at(by, read_all).await.unwrap_or(false)
}
