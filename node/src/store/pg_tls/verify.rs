//! The server certificate check each `sslmode` asks for.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::SslMode;

/// The rustls client configuration for `mode`, with roots from `root` when it checks.
pub(super) fn client_config(mode: SslMode, root: Option<&str>) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("postgres TLS: {e}"))?;
    let config = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PartialCheck {
                chain: None,
                provider,
            })),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = Arc::new(roots(root)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| format!("postgres TLS: {e}"))?;
            if mode == SslMode::VerifyFull {
                builder.with_webpki_verifier(webpki)
            } else {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(PartialCheck {
                        chain: Some(webpki),
                        provider,
                    }))
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

/// The check of `prefer`, `require` and `verify-ca`, less than WebPKI's: `prefer` and
/// `require` (without `chain`) encrypt without a certificate check (libpq's behaviour
/// without a root certificate); `verify-ca` (with `chain`) wants the chain to lead to a
/// trusted root, but the name in the certificate may be any. The handshake signatures
/// are always verified, so the peer holds the key of the certificate it shows.
#[derive(Debug)]
struct PartialCheck {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PartialCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        // WebPKI checks the chain before the name, so a name mismatch is the only
        // error let through.
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
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
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
