//! The verifier: the operator's keys (an HS256 secret, PEM public keys, a JWKS URL),
//! and the checks every app token passes: a known key of the token's own algorithm,
//! its signature, `iss`, `aud`, `exp` (strict), `nbf` and `iat` (within the allowed skew),
//! and the revocations.

use std::sync::Arc;

use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};

use super::claims::AppClaims;
use super::jwks::Jwks;
use super::live::Revocations;
use super::source::KeySource;

/// Why a token was refused (always 401 / 4001; the reason is logged, not sent).
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("app tokens are not set up on this node")]
    NotConfigured,
    #[error("malformed token: {0}")]
    Malformed(String),
    #[error("no key for this token (alg {alg:?}, kid {kid:?})")]
    NoKey { alg: String, kid: Option<String> },
    #[error("invalid token: {0}")]
    Invalid(String),
    #[error("the token expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was revoked")]
    Revoked,
}

/// Verifies app tokens. Cheap to clone.
#[derive(Clone)]
pub struct Verifier {
    inner: Arc<Inner>,
}

struct Inner {
    source: KeySource,
    jwks: Option<Jwks>,
    pub(super) revocations: Revocations,
}

/// Algorithms a token may name: nothing else is ever tried (`none` is not one).
const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::HS256,
    Algorithm::RS256,
    Algorithm::ES256,
    Algorithm::EdDSA,
];

impl Verifier {
    /// A verifier; fails on settings that cannot work (keys without `iss`/`aud`, a JWKS
    /// URL that is plain HTTP off loopback).
    pub fn new(source: KeySource, revocations: Revocations) -> Result<Self, String> {
        if source.is_configured() && (source.issuer.is_empty() || source.audience.is_empty()) {
            return Err(
                "app tokens need ATRIUM_APP_TOKEN_ISSUER and ATRIUM_APP_TOKEN_AUDIENCE".into(),
            );
        }
        if matches!(&source.hs256_secret, Some(s) if s.len() < 32) {
            return Err("ATRIUM_APP_TOKEN_HS256_SECRET must be at least 32 bytes".into());
        }
        let jwks = match &source.jwks_url {
            Some(url) => Some(Jwks::new(url, &source)?),
            None => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                source,
                jwks,
                revocations,
            }),
        })
    }

    pub fn is_configured(&self) -> bool {
        self.inner.source.is_configured()
    }

    pub fn revocations(&self) -> &Revocations {
        &self.inner.revocations
    }

    /// Starts the JWKS's periodic refresh (and its first fetch), when there is one.
    pub fn spawn_refresh(&self, stopping: tokio::sync::watch::Receiver<bool>) {
        if let Some(jwks) = &self.inner.jwks {
            jwks.spawn_refresh(stopping);
        }
    }

    /// The token's claims, once every check passed.
    pub async fn verify(&self, token: &str) -> Result<AppClaims, TokenError> {
        if !self.is_configured() {
            return Err(TokenError::NotConfigured);
        }
        let header = decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(TokenError::NoKey {
                alg: format!("{:?}", header.alg),
                kid: header.kid,
            });
        }
        let keys = self.keys_for(header.alg, header.kid.as_deref()).await;
        if keys.is_empty() {
            return Err(TokenError::NoKey {
                alg: format!("{:?}", header.alg),
                kid: header.kid,
            });
        }
        let mut last = TokenError::Invalid("no key matched".into());
        for key in &keys {
            match self.check(token, header.alg, key) {
                Ok(claims) => return self.after_signature(claims),
                Err(e @ TokenError::Invalid(_)) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Keys that may have signed a token of `alg` (and `kid`): each of the token's own
    /// algorithm only, so a public key is never taken as an HMAC secret.
    async fn keys_for(&self, alg: Algorithm, kid: Option<&str>) -> Vec<DecodingKey> {
        let source = &self.inner.source;
        let mut keys = Vec::new();
        if alg == Algorithm::HS256 {
            if let Some(secret) = &source.hs256_secret {
                keys.push(DecodingKey::from_secret(secret));
            }
            return keys;
        }
        keys.extend(
            source
                .pem_keys
                .iter()
                .filter(|k| k.alg == alg)
                .map(|k| k.key.clone()),
        );
        if let Some(jwks) = &self.inner.jwks {
            keys.extend(jwks.keys_for(alg, kid).await);
        }
        keys
    }

    fn check(
        &self,
        token: &str,
        alg: Algorithm,
        key: &DecodingKey,
    ) -> Result<AppClaims, TokenError> {
        let source = &self.inner.source;
        let mut v = Validation::new(alg);
        v.algorithms = vec![alg];
        v.set_issuer(&[&source.issuer]);
        v.set_audience(&[&source.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // `exp` is strict (a socket closes at it); `nbf` is checked below with the skew.
        v.leeway = 0;
        v.validate_exp = true;
        v.validate_nbf = false;
        use jsonwebtoken::errors::ErrorKind;
        match decode::<AppClaims>(token, key, &v) {
            Ok(data) => data.claims.check().map_err(TokenError::Invalid),
            Err(e) => Err(match e.kind() {
                ErrorKind::ExpiredSignature => TokenError::Expired,
                ErrorKind::InvalidSignature => TokenError::Invalid("bad signature".into()),
                _ => TokenError::Invalid(e.to_string()),
            }),
        }
    }

    fn after_signature(&self, claims: AppClaims) -> Result<AppClaims, TokenError> {
        let now = crate::clock::unix_ms() / 1000;
        let skew = self.inner.source.skew_s as i64;
        if claims.nbf.is_some_and(|nbf| nbf > now + skew) {
            return Err(TokenError::NotYetValid);
        }
        if claims.iat.is_some_and(|iat| iat > now + skew) {
            return Err(TokenError::NotYetValid);
        }
        if self.inner.revocations.revoked(&claims) {
            return Err(TokenError::Revoked);
        }
        Ok(claims)
    }
}
