//! TLS to Postgres, as libpq's `sslmode` and `sslrootcert` in `ATRIUM_DATABASE_URL` ask.
//!
//! tokio-postgres reads `sslmode=disable|prefer|require` itself and knows nothing of the
//! certificate checks; this module takes both settings out of the URL, hands tokio-postgres
//! the mode it understands, and builds the rustls configuration that does the checking:
//!
//! | `sslmode` | TLS | server certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | when the server offers it, else plain | not checked |
//! | `require` | always | not checked; checked as `verify-ca` when `sslrootcert` is given (as libpq) |
//! | `verify-ca` | always | chain to `sslrootcert` (or the system's roots) |
//! | `verify-full` | always | chain as `verify-ca`, and the host name (or IP) in the URL |
//!
//! `sslrootcert` is a PEM file of one or more certificates, or `system` for the system's
//! roots; without it the system's roots are used.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What `sslmode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other:?} is not supported: use disable, prefer, require, \
                     verify-ca or verify-full"
                ))
            }
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// A connection setting ready for tokio-postgres (or deadpool): the parsed URL with the mode
/// tokio-postgres understands, the TLS connector, and the mode as asked.
pub struct PgConnect {
    pub config: tokio_postgres::Config,
    pub tls: MakeRustlsConnect,
    pub mode: SslMode,
}

/// Reads a Postgres URL (`postgres://...` or `postgresql://...`), `sslmode` and
/// `sslrootcert` included. Errors name what is wrong, never the password.
pub fn parse(url: &str) -> Result<PgConnect, String> {
    let (rest, mode, root) = take_ssl_params(url)?;
    let mut config: tokio_postgres::Config = rest.parse().map_err(|e| {
        if is_url(url) {
            format!("bad Postgres URL: {e}")
        } else {
            format!(
                "bad Postgres URL: {e} (sslmode verify-ca and verify-full and sslrootcert \
                 need the URL form, postgres://...)"
            )
        }
    })?;
    let mut mode = match mode {
        Some(m) => SslMode::parse(&m)?,
        // Without one in the URL, what tokio-postgres read (a key=value string's own
        // sslmode, or its default, prefer).
        None => match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Disable => SslMode::Disable,
            tokio_postgres::config::SslMode::Require => SslMode::Require,
            _ => SslMode::Prefer,
        },
    };
    if mode == SslMode::Require && root.is_some() {
        // libpq: with a root certificate, `require` checks the chain as `verify-ca` does.
        mode = SslMode::VerifyCa;
    }
    config.ssl_mode(match mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    let tls = MakeRustlsConnect::new(client_config(mode, root.as_deref())?);
    Ok(PgConnect { config, tls, mode })
}

fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// The URL without its `sslmode` and `sslrootcert` query parameters, and their values
/// (percent-decoded). Strings that are not URLs (`host=... user=...`) pass unchanged.
fn take_ssl_params(url: &str) -> Result<(String, Option<String>, Option<String>), String> {
    let Some((base, query)) = url.split_once('?').filter(|_| is_url(url)) else {
        return Ok((url.to_owned(), None, None));
    };
    let (mut mode, mut root) = (None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match decode(k)?.as_str() {
            "sslmode" => mode = Some(decode(v)?),
            "sslrootcert" => root = Some(decode(v)?),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, mode, root.filter(|r| !r.is_empty())))
}

/// Percent-decodes a URL query component (`+` stays `+`, as tokio-postgres reads it).
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "bad Postgres URL: a bad %-escape in the query".to_string())?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "bad Postgres URL: the query is not UTF-8".to_string())
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for `mode`, with roots from `root` when it checks.
fn client_config(mode: SslMode, root: Option<&str>) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("postgres TLS: {e}"))?;
    let config = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider))),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = Arc::new(roots(root)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| format!("postgres TLS: {e}"))?;
            if mode == SslMode::VerifyFull {
                builder.with_webpki_verifier(webpki)
            } else {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
            }
        }
    };
    Ok(config.with_no_client_auth())
}

/// The trust anchors: the PEM file `root` names, or the system's.
fn roots(root: Option<&str>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match root {
        Some(path) if path != "system" => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("sslrootcert={path}: cannot read certificates: {e}"))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert={path}: no usable certificate in the file"
                ));
            }
        }
        _ => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(
                    "sslmode verify-ca/verify-full: no system root certificates found; \
                     name the server's CA with sslrootcert=/path/to/ca.pem"
                        .to_string(),
                );
            }
        }
    }
    Ok(store)
}

/// `prefer` and `require`: encryption without a certificate check (libpq's behaviour
/// without a root certificate). The handshake signatures are still verified, so the peer
/// holds the key of the certificate it shows.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the name in the certificate may be
/// any. The WebPKI verifier checks the chain before the name, so a name mismatch is the
/// only error let through.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_postgres::config::SslMode as Pg;

    fn mode(url: &str) -> (SslMode, Pg) {
        let c = parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        (c.mode, c.config.get_ssl_mode())
    }

    #[test]
    fn modes_map_to_what_tokio_postgres_knows() {
        let base = "postgres://u:p@db:5432/atrium";
        assert_eq!(mode(base), (SslMode::Prefer, Pg::Prefer));
        assert_eq!(
            mode(&format!("{base}?sslmode=disable")),
            (SslMode::Disable, Pg::Disable)
        );
        assert_eq!(
            mode(&format!("{base}?sslmode=prefer")),
            (SslMode::Prefer, Pg::Prefer)
        );
        assert_eq!(
            mode(&format!("{base}?sslmode=require")),
            (SslMode::Require, Pg::Require)
        );
        // A system root store may be empty on a build machine: verify modes are checked
        // with a root file in the tests of tests/postgres_tls.rs.
    }

    #[test]
    fn other_parameters_survive_and_ssl_ones_are_taken_out() {
        let (rest, mode, root) = take_ssl_params(
            "postgresql://u@h/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&options=-c%20a%3Db",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgresql://u@h/db?application_name=x&options=-c%20a%3Db"
        );
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/etc/ca.pem"));
        let (rest, mode, root) = take_ssl_params("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!(
            (rest.as_str(), mode.as_deref(), root),
            ("postgres://u@h/db", Some("require"), None)
        );
        let kv = "host=h user=u sslmode=require";
        assert_eq!(take_ssl_params(kv).unwrap(), (kv.to_owned(), None, None));
        assert_eq!(mode_of_kv(kv), SslMode::Require);
    }

    fn mode_of_kv(s: &str) -> SslMode {
        parse(s).unwrap().mode
    }

    #[test]
    fn bad_settings_are_named() {
        let e = parse("postgres://u@h/db?sslmode=allow").err().unwrap();
        assert!(e.contains("sslmode=\"allow\" is not supported"), "{e}");
        let e = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
            .err()
            .unwrap();
        assert!(e.contains("sslrootcert=/nonexistent/ca.pem"), "{e}");
        let e = parse("postgres://u@h/db?sslrootcert=%zz").err().unwrap();
        assert!(e.contains("%-escape"), "{e}");
        let e = parse("host=h sslmode=verify-full").err().unwrap();
        assert!(e.contains("URL form"), "{e}");
    }
}
