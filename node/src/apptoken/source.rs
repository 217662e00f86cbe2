//! Where the verifier's keys come from: the operator's settings, read once at start.

use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey};

/// A key the operator configured by hand.
#[derive(Clone)]
pub struct StaticKey {
    pub alg: Algorithm,
    pub key: DecodingKey,
    /// What the settings called it (for logs).
    pub origin: String,
}

/// Where the verifier's keys come from (`docs/operations.md`, "App tokens").
#[derive(Default, Clone)]
pub struct KeySource {
    pub hs256_secret: Option<Vec<u8>>,
    pub pem_keys: Vec<StaticKey>,
    pub jwks_url: Option<String>,
    pub issuer: String,
    pub audience: String,
    /// Allowed clock skew, for `nbf` and `iat`.
    pub skew_s: u64,
    pub jwks_refresh: Duration,
    pub jwks_min_refetch: Duration,
    pub jwks_keep: Duration,
}

impl KeySource {
    /// Reads a PEM public key and names its algorithm by its type: RSA gives RS256,
    /// EC (P-256) ES256, Ed25519 EdDSA.
    pub fn read_pem(origin: &str, pem: &[u8]) -> Result<StaticKey, String> {
        let (alg, key) = if let Ok(k) = DecodingKey::from_rsa_pem(pem) {
            (Algorithm::RS256, k)
        } else if let Ok(k) = DecodingKey::from_ec_pem(pem) {
            (Algorithm::ES256, k)
        } else if let Ok(k) = DecodingKey::from_ed_pem(pem) {
            (Algorithm::EdDSA, k)
        } else {
            return Err(format!(
                "{origin}: not an RSA, EC P-256 or Ed25519 public key in PEM"
            ));
        };
        Ok(StaticKey {
            alg,
            key,
            origin: origin.to_owned(),
        })
    }

    pub fn is_configured(&self) -> bool {
        self.hs256_secret.is_some() || !self.pem_keys.is_empty() || self.jwks_url.is_some()
    }
}
