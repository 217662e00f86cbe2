//! A webhook receiver on loopback: a small HTTP server that keeps what it was sent,
//! answers with the status it is told to (or never answers), and can go down and come
//! back on the same port. Signatures are checked here, independently of the node's code:
//! HMAC-SHA256 of `id.timestamp.body` under the secret's base64-decoded key.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Got {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub body: String,
    pub json: Value,
    pub status: u16,
}

impl Got {
    pub fn kind(&self) -> &str {
        self.json["type"].as_str().unwrap_or("")
    }
    pub fn file(&self) -> &str {
        self.json["data"]["file_id"].as_str().unwrap_or("")
    }
}

/// `0` means: accept, read, never answer (a hung endpoint).
pub const HANG: u16 = 0;

pub struct Receiver {
    pub addr: SocketAddr,
    got: Arc<Mutex<Vec<Got>>>,
    status: Arc<AtomicU16>,
    connections: Arc<AtomicUsize>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut r = Receiver {
            addr: listener.local_addr().unwrap(),
            got: Arc::default(),
            status: Arc::new(AtomicU16::new(200)),
            connections: Arc::default(),
            task: None,
        };
        r.serve(listener);
        r
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks", self.addr)
    }

    /// Answers every next request with `status` (`HANG`: never answers).
    pub fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Stops listening and closes its connections: new ones are refused until `up`.
    pub fn down(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }

    /// Listens again on the same port.
    pub async fn up(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("rebind {}: {e}", self.addr),
            }
        };
        self.serve(listener);
    }

    fn serve(&mut self, listener: TcpListener) {
        let (got, status) = (self.got.clone(), self.status.clone());
        let connections = self.connections.clone();
        self.task = Some(tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                connections.fetch_add(1, Ordering::SeqCst);
                let (got, status) = (got.clone(), status.clone());
                conns.spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (got, status) = (got.clone(), status.clone());
                        async move {
                            let header = |name: &str| {
                                req.headers()
                                    .get(name)
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("")
                                    .to_owned()
                            };
                            let (id, ts, sig) = (
                                header("webhook-id"),
                                header("webhook-timestamp"),
                                header("webhook-signature"),
                            );
                            let body = req.into_body().collect().await?.to_bytes();
                            let body = String::from_utf8_lossy(&body).into_owned();
                            let answer = status.load(Ordering::SeqCst);
                            got.lock().unwrap().push(Got {
                                id,
                                timestamp: ts.parse().unwrap_or(0),
                                signature: sig,
                                json: serde_json::from_str(&body).unwrap_or(Value::Null),
                                body,
                                status: answer,
                            });
                            if answer == HANG {
                                std::future::pending::<()>().await;
                            }
                            let mut resp = hyper::Response::new(Full::new(Bytes::new()));
                            *resp.status_mut() = hyper::StatusCode::from_u16(answer).unwrap();
                            Ok::<_, hyper::Error>(resp)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }));
    }

    /// Everything received so far, answered or not.
    pub fn all(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    /// What was received and answered 2xx (what counts as delivered).
    pub fn delivered(&self) -> Vec<Got> {
        self.all()
            .into_iter()
            .filter(|g| (200..300).contains(&g.status))
            .collect()
    }

    /// Waits until `want` holds for what was delivered, or panics after `within`.
    pub async fn wait_for(
        &self,
        within: Duration,
        what: &str,
        want: impl Fn(&[Got]) -> bool,
    ) -> Vec<Got> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.delivered();
            if want(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "webhook receiver: waited {within:?} for {what}; delivered: {:#?}",
                got.iter().map(|g| &g.body).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.down();
    }
}

/// Checks a message's signature as a receiver would: `v1,` and the base64 of
/// HMAC-SHA256(key, "id.timestamp.body"), the key being the secret after `whsec_`,
/// base64-decoded.
pub fn verify(secret: &str, got: &Got) -> bool {
    let Some(key) = secret
        .strip_prefix("whsec_")
        .and_then(|b| STANDARD.decode(b).ok())
    else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let signed = format!("{}.{}.{}", got.id, got.timestamp, got.body);
    got.signature.split(' ').any(|s| {
        s.strip_prefix("v1,")
            .and_then(|b| STANDARD.decode(b).ok())
            .is_some_and(|mac| ring::hmac::verify(&key, signed.as_bytes(), &mac).is_ok())
    })
}
