//! The JWKS: the app's public keys fetched from a URL (HTTPS, or HTTP on loopback),
//! cached, fetched again on a `kid` it does not know (at most once per
//! `ATRIUM_APP_TOKEN_JWKS_MIN_REFETCH_MS`) and every `ATRIUM_APP_TOKEN_JWKS_REFRESH_MS`.
//! A key that leaves the set is kept for `ATRIUM_APP_TOKEN_JWKS_KEEP_MS` more, so tokens
//! signed with it before a rotation still verify (a refresh on a live socket included):
//! a rotation never drops a socket.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};
use tokio::net::TcpStream;

use super::source::KeySource;

/// Largest JWKS document read.
const MAX_JWKS_BYTES: usize = 256 * 1024;
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub(super) struct Jwks {
    inner: Arc<Inner>,
}

struct Inner {
    url: Url,
    refresh: Duration,
    min_refetch: Duration,
    keep: Duration,
    cache: Mutex<Cache>,
    /// One fetch at a time.
    fetching: tokio::sync::Mutex<()>,
    tls: Option<tokio_rustls::TlsConnector>,
}

#[derive(Default)]
struct Cache {
    keys: Vec<Cached>,
    last_fetch: Option<Instant>,
}

struct Cached {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
    /// When it left the set (kept until `keep` after it).
    retired: Option<Instant>,
}

#[derive(Debug, Clone)]
struct Url {
    https: bool,
    host: String,
    port: u16,
    path: String,
}

fn parse_url(url: &str) -> Result<Url, String> {
    let bad = || format!("ATRIUM_APP_TOKEN_JWKS_URL: `{url}` is not an http(s) URL");
    let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(bad());
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
            (h.to_owned(), p.parse::<u16>().map_err(|_| bad())?)
        }
        _ => (authority.to_owned(), if https { 443 } else { 80 }),
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    if host.is_empty() || authority.contains('@') {
        return Err(bad());
    }
    if !https && !is_loopback(&host) {
        return Err(format!(
            "ATRIUM_APP_TOKEN_JWKS_URL: plain http is allowed only on loopback, not `{host}`"
        ));
    }
    Ok(Url {
        https,
        host,
        port,
        path,
    })
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The algorithm a JWK is for: its `alg`, else what its key type implies. `None` for
/// symmetric keys (never taken from a JWKS) and for anything else the node does not verify.
fn jwk_algorithm(jwk: &jsonwebtoken::jwk::Jwk) -> Option<Algorithm> {
    let implied = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        _ => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(implied),
        Some(KeyAlgorithm::RS256) if implied == Algorithm::RS256 => Some(implied),
        Some(KeyAlgorithm::ES256) if implied == Algorithm::ES256 => Some(implied),
        Some(KeyAlgorithm::EdDSA) if implied == Algorithm::EdDSA => Some(implied),
        Some(_) => None,
    }
}

impl Jwks {
    pub(super) fn new(url: &str, source: &KeySource) -> Result<Self, String> {
        let url = parse_url(url)?;
        let tls = if url.https {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut roots = rustls::RootCertStore::empty();
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("JWKS TLS: {e}"))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
        } else {
            None
        };
        Ok(Self {
            inner: Arc::new(Inner {
                url,
                refresh: source.jwks_refresh.max(Duration::from_secs(1)),
                min_refetch: source.jwks_min_refetch,
                keep: source.jwks_keep,
                cache: Mutex::default(),
                fetching: tokio::sync::Mutex::new(()),
                tls,
            }),
        })
    }

    pub(super) fn spawn_refresh(&self, mut stopping: tokio::sync::watch::Receiver<bool>) {
        let jwks = self.clone();
        tokio::spawn(async move {
            loop {
                jwks.refetch().await;
                tokio::select! {
                    _ = tokio::time::sleep(jwks.inner.refresh) => {}
                    _ = stopping.changed() => return,
                }
            }
        });
    }

    /// The keys of `alg` (with `kid`, when the token names one); a `kid` not in the
    /// cache fetches the set again, unless it was fetched within `min_refetch`.
    pub(super) async fn keys_for(&self, alg: Algorithm, kid: Option<&str>) -> Vec<DecodingKey> {
        let found = self.cached(alg, kid);
        if !found.is_empty() {
            return found;
        }
        let due = {
            let cache = self.inner.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .last_fetch
                .is_none_or(|at| at.elapsed() >= self.inner.min_refetch)
        };
        if due {
            let _one = self.inner.fetching.lock().await;
            // Another fetch may have just brought the key.
            let found = self.cached(alg, kid);
            if !found.is_empty() {
                return found;
            }
            let again = {
                let cache = self.inner.cache.lock().unwrap_or_else(|p| p.into_inner());
                cache
                    .last_fetch
                    .is_none_or(|at| at.elapsed() >= self.inner.min_refetch)
            };
            if again {
                self.fetch_now().await;
            }
        }
        self.cached(alg, kid)
    }

    fn cached(&self, alg: Algorithm, kid: Option<&str>) -> Vec<DecodingKey> {
        let cache = self.inner.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .keys
            .iter()
            .filter(|k| k.alg == alg)
            .filter(|k| kid.is_none() || k.kid.as_deref() == kid)
            .map(|k| k.key.clone())
            .collect()
    }

    async fn refetch(&self) {
        let _one = self.inner.fetching.lock().await;
        self.fetch_now().await;
    }

    async fn fetch_now(&self) {
        let now = Instant::now();
        let result = tokio::time::timeout(FETCH_TIMEOUT, self.get()).await;
        let mut cache = self.inner.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.last_fetch = Some(now);
        let set = match result {
            Ok(Ok(set)) => set,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not fetch the JWKS; keeping the keys it had");
                return;
            }
            Err(_) => {
                tracing::warn!("the JWKS fetch timed out; keeping the keys it had");
                return;
            }
        };
        let mut fresh: Vec<Cached> = Vec::new();
        for jwk in &set.keys {
            let Some(alg) = jwk_algorithm(jwk) else {
                continue;
            };
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            fresh.push(Cached {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
                retired: None,
            });
        }
        // Keys that left the set stay until `keep` after they left.
        let keep = self.inner.keep;
        for mut old in std::mem::take(&mut cache.keys) {
            let still = fresh.iter().any(|k| k.kid == old.kid && k.alg == old.alg);
            if still {
                continue;
            }
            let retired = *old.retired.get_or_insert(now);
            if now.duration_since(retired) < keep {
                fresh.push(old);
            }
        }
        tracing::debug!(keys = fresh.len(), "JWKS fetched");
        cache.keys = fresh;
    }

    async fn get(&self) -> Result<JwkSet, String> {
        let url = &self.inner.url;
        let stream = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let host_header = if (url.https && url.port == 443) || (!url.https && url.port == 80) {
            url.host.clone()
        } else {
            format!("{}:{}", url.host, url.port)
        };
        let req = hyper::Request::get(url.path.as_str())
            .header(hyper::header::HOST, host_header)
            .header(hyper::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let resp = match &self.inner.tls {
            Some(tls) => {
                let name = rustls::pki_types::ServerName::try_from(url.host.clone())
                    .map_err(|e| e.to_string())?;
                let stream = tls
                    .connect(name, stream)
                    .await
                    .map_err(|e| format!("TLS: {e}"))?;
                send(TokioIo::new(stream), req).await?
            }
            None => send(TokioIo::new(stream), req).await?,
        };
        serde_json::from_slice(&resp).map_err(|e| format!("not a JWKS: {e}"))
    }
}

async fn send<T>(io: T, req: hyper::Request<Empty<Bytes>>) -> Result<Bytes, String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!("status {}", resp.status()));
    }
    Limited::new(resp.into_body(), MAX_JWKS_BYTES)
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| format!("body: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_or_loopback_http() {
        let u = parse_url("https://auth.example.com/.well-known/jwks.json").unwrap();
        assert!(u.https && u.port == 443 && u.host == "auth.example.com");
        assert_eq!(u.path, "/.well-known/jwks.json");
        let u = parse_url("http://127.0.0.1:9000/jwks").unwrap();
        assert!(!u.https && u.port == 9000);
        assert!(parse_url("http://[::1]:9000/jwks").is_ok());
        assert!(parse_url("http://localhost/jwks").is_ok());
        assert!(parse_url("http://auth.example.com/jwks").is_err());
        assert!(parse_url("ftp://x/jwks").is_err());
        assert!(parse_url("https://user@x/jwks").is_err());
    }
}
