//! App tokens: JWTs signed by the app's backend (docs/auth.md), verified with the
//! operator's HS256 secret, PEM public keys (RS256, ES256, EdDSA) or a JWKS URL.
//!
//! How the node tells the kinds of bearer apart, without guessing: an app token is
//! a JWS in compact form and always holds two `.`; Atrium's session tokens are 32
//! characters of `[0-9A-Za-z]` and API keys start `atk_` followed by the same
//! alphabet: neither ever holds a `.`. So a token with a `.` is an app token (and
//! is refused with 401 when app tokens are not set up), anything else is looked up
//! as before.

mod claims;
mod jwks;
mod keys;
mod live;
mod source;

pub use claims::{owner_for, AppClaims, Grant, Level};
pub use keys::{TokenError, Verifier};
pub use live::{run, AppSockets, Revocation, Revocations};
pub use source::{KeySource, StaticKey};

/// Whether a bearer is an app token (a JWS: it holds a `.`).
pub fn is_app_token(token: &str) -> bool {
    token.contains('.')
}

#[cfg(test)]
mod tests;
