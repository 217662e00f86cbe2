//! App tokens for tests: key pairs of each algorithm made with the `openssl` command,
//! tokens signed with them (the `jsonwebtoken` crate, as an app's backend would), and a
//! JWKS served on loopback whose keys a test can rotate.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
pub use jsonwebtoken::Algorithm;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::{json, Value};

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn openssl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("run openssl (the tests make their keys with it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// An asymmetric key pair in PEM files, with its public JWK.
pub struct KeyPair {
    pub alg: Algorithm,
    pub kid: String,
    pub private_pem: Vec<u8>,
    pub public_pem: Vec<u8>,
    /// Where the public key's PEM is (for `ATRIUM_APP_TOKEN_PUBLIC_KEYS`).
    pub public_path: PathBuf,
    /// The public key as a JWK (with `kid` and `alg`).
    pub jwk: Value,
}

/// A fresh key pair for RS256, ES256 or EdDSA, named `kid`.
pub fn key_pair(alg: Algorithm, kid: &str) -> KeyPair {
    let dir = std::env::temp_dir().join(format!("atrium-jwt-{}", crate::env::secret()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let private = dir.join("private.pem");
    let public = dir.join("public.pem");
    let p = private.to_str().unwrap();
    match alg {
        Algorithm::RS256 => openssl(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            p,
        ]),
        Algorithm::ES256 => openssl(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            p,
        ]),
        Algorithm::EdDSA => openssl(&["genpkey", "-algorithm", "ED25519", "-out", p]),
        other => panic!("no key pair for {other:?}"),
    };
    openssl(&[
        "pkey",
        "-in",
        p,
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);
    let der = openssl(&["pkey", "-in", p, "-pubout", "-outform", "DER"]);
    let (alg_name, mut jwk) = match alg {
        Algorithm::RS256 => {
            let modulus =
                String::from_utf8(openssl(&["rsa", "-in", p, "-modulus", "-noout"])).unwrap();
            let hex = modulus.trim().trim_start_matches("Modulus=");
            let n: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            ("RS256", json!({"kty": "RSA", "n": b64url(&n), "e": "AQAB"}))
        }
        Algorithm::ES256 => {
            let point = &der[der.len() - 65..];
            assert_eq!(point[0], 4, "an uncompressed P-256 point");
            (
                "ES256",
                json!({"kty": "EC", "crv": "P-256", "x": b64url(&point[1..33]), "y": b64url(&point[33..])}),
            )
        }
        _ => (
            "EdDSA",
            json!({"kty": "OKP", "crv": "Ed25519", "x": b64url(&der[der.len() - 32..])}),
        ),
    };
    jwk["kid"] = json!(kid);
    jwk["alg"] = json!(alg_name);
    jwk["use"] = json!("sig");
    KeyPair {
        alg,
        kid: kid.to_owned(),
        private_pem: std::fs::read(&private).unwrap(),
        public_pem: std::fs::read(&public).unwrap(),
        public_path: public,
        jwk,
    }
}

impl Drop for KeyPair {
    /// The key's folder goes with it, so test runs leave nothing in the temp dir.
    fn drop(&mut self) {
        if let Some(dir) = self.public_path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Reads a private key of one kind from PEM.
type KeyReader = fn(&[u8]) -> jsonwebtoken::errors::Result<EncodingKey>;

/// Signs tokens as an app's backend does.
#[derive(Clone)]
pub struct Minter {
    pub alg: Algorithm,
    pub kid: Option<String>,
    key: EncodingKey,
}

impl Minter {
    pub fn hs256(secret: &[u8]) -> Self {
        Self {
            alg: Algorithm::HS256,
            kid: None,
            key: EncodingKey::from_secret(secret),
        }
    }

    pub fn of(pair: &KeyPair) -> Self {
        let key = match pair.alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&pair.private_pem),
            Algorithm::ES256 => EncodingKey::from_ec_pem(&pair.private_pem),
            _ => EncodingKey::from_ed_pem(&pair.private_pem),
        }
        .expect("the key pair's private key");
        Self {
            alg: pair.alg,
            kid: Some(pair.kid.clone()),
            key,
        }
    }

    /// A signer from a PEM private key (PKCS#8, or PKCS#1 for RSA): RSA signs RS256, EC
    /// P-256 ES256, Ed25519 EdDSA.
    pub fn from_private_pem(pem: &[u8], kid: Option<String>) -> Result<Self, String> {
        let text = String::from_utf8_lossy(pem);
        let tries: [(Algorithm, KeyReader); 3] = [
            (Algorithm::EdDSA, EncodingKey::from_ed_pem),
            (Algorithm::ES256, EncodingKey::from_ec_pem),
            (Algorithm::RS256, EncodingKey::from_rsa_pem),
        ];
        // An RSA key parses as nothing else; try it first when the PEM says so.
        let order: Vec<_> = if text.contains("RSA") {
            tries.iter().rev().collect()
        } else {
            tries.iter().collect()
        };
        for (alg, make) in order {
            if let Ok(key) = make(pem) {
                let minter = Self {
                    alg: *alg,
                    kid: kid.clone(),
                    key,
                };
                // Sign once: a key of another kind that parsed fails here.
                let probe = json!({"sub": "probe", "exp": 1});
                if jsonwebtoken::encode(&minter.header(), &probe, &minter.key).is_ok() {
                    return Ok(minter);
                }
            }
        }
        Err("not an RSA, EC P-256 or Ed25519 private key in PEM".into())
    }

    fn header(&self) -> Header {
        let mut header = Header::new(self.alg);
        header.kid = self.kid.clone();
        header
    }

    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = self.kid.clone();
        jsonwebtoken::encode(&header, claims, &self.key).expect("sign a token")
    }
}

/// Now, in Unix seconds.
pub fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Claims for `sub` from `iss` to `aud`, living `ttl_s` from now, with a grant of `files`.
pub fn claims(iss: &str, aud: &str, sub: &str, ttl_s: i64, files: Value) -> Value {
    json!({
        "iss": iss,
        "aud": aud,
        "sub": sub,
        "name": format!("Person {sub}"),
        "iat": now_s(),
        "exp": now_s() + ttl_s,
        "jti": crate::env::secret(),
        "files": files,
    })
}

/// A token signed with `alg: none`, by hand (no library signs one).
pub fn unsigned(claims: &Value) -> String {
    let header = b64url(br#"{"alg":"none","typ":"JWT"}"#);
    let body = b64url(claims.to_string().as_bytes());
    format!("{header}.{body}.")
}

/// A token signed HS256 with `secret` (any bytes: a public key's PEM, for the
/// confusion attack), with `kid`.
pub fn hs256_with(secret: &[u8], kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret)).unwrap()
}

/// A JWKS served over HTTP on loopback; its keys can change while it runs.
pub struct JwksServer {
    pub port: u16,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    /// Served over TLS, with a certificate for 127.0.0.1 from [`TestCa`].
    https: bool,
}

impl JwksServer {
    /// A JWKS over plain HTTP on loopback.
    pub async fn start(keys: Vec<Value>) -> Self {
        Self::serve(keys, None).await
    }

    /// A JWKS over HTTPS on loopback, its certificate (for IP 127.0.0.1) signed by `ca`.
    pub async fn start_https(keys: Vec<Value>, ca: &TestCa) -> Self {
        Self::serve(keys, Some(ca.server_tls())).await
    }

    async fn serve(keys: Vec<Value>, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let keys = Arc::new(Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (k, f, acceptor) = (keys.clone(), fetches.clone(), tls.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (k, f, acceptor) = (k.clone(), f.clone(), acceptor.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |_req| {
                        f.fetch_add(1, Ordering::SeqCst);
                        let body = json!({"keys": *k.lock().unwrap()}).to_string();
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(body)))
                                    .unwrap(),
                            )
                        }
                    });
                    let http = hyper::server::conn::http1::Builder::new();
                    match acceptor {
                        None => {
                            let _ = http.serve_connection(TokioIo::new(stream), svc).await;
                        }
                        // A client that refuses the certificate ends the handshake here.
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(stream).await {
                                let _ = http.serve_connection(TokioIo::new(tls), svc).await;
                            }
                        }
                    }
                });
            }
        });
        Self {
            port,
            keys,
            fetches,
            https: tls.is_some(),
        }
    }

    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}/.well-known/jwks.json", self.port)
    }

    pub fn set_keys(&self, keys: Vec<Value>) {
        *self.keys.lock().unwrap() = keys;
    }

    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// A certificate authority made for one test (with the `openssl` command), and a server
/// certificate it signed for IP 127.0.0.1. A node trusts it through `SSL_CERT_FILE`
/// ([`TestCa::ca_file`]), as an operator's node trusts a private CA.
pub struct TestCa {
    dir: PathBuf,
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TestCa {
    pub fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("atrium-ca-{}", crate::env::secret()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
        let (ca_key, ca_pem) = (path("ca.key"), path("ca.pem"));
        let (server_key, server_csr) = (path("server.key"), path("server.csr"));
        let ec_key = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ];
        let mut ca = vec!["req", "-x509", "-keyout", &ca_key, "-out", &ca_pem];
        ca.extend(ec_key);
        ca.extend(["-subj", "/CN=Atrium test CA", "-days", "2"]);
        ca.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
        ca.extend(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
        openssl(&ca);
        let mut csr = vec!["req", "-keyout", &server_key, "-out", &server_csr];
        csr.extend(ec_key);
        csr.extend(["-subj", "/CN=127.0.0.1"]);
        openssl(&csr);
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write server.ext");
        openssl(&[
            "x509",
            "-req",
            "-in",
            &path("server.csr"),
            "-CA",
            &path("ca.pem"),
            "-CAkey",
            &path("ca.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &path("server.ext"),
            "-out",
            &path("server.pem"),
        ]);
        Self { dir }
    }

    /// The CA's certificate (PEM): what `SSL_CERT_FILE` names for a node that trusts it.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    fn server_tls(&self) -> tokio_rustls::TlsAcceptor {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_file_iter(self.dir.join("server.pem"))
            .expect("server.pem")
            .collect::<Result<Vec<_>, _>>()
            .expect("server certificate");
        let key = PrivateKeyDer::from_pem_file(self.dir.join("server.key")).expect("server.key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate and key");
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}
