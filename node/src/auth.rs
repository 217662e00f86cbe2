//! Passwords and sessions: Argon2id hashes computed on blocking threads with a
//! node-wide bound, and session tokens that the store only knows by digest.

use std::sync::Arc;
use std::time::Duration;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::Semaphore;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Every hashing slot stayed busy: the caller should answer 503.
    #[error("password hashing is at capacity")]
    Busy,
    #[error("password hashing failed: {0}")]
    Internal(String),
}

/// How long a sign-in waits for a hashing slot before giving up with 503.
const HASH_QUEUE_WAIT: Duration = Duration::from_secs(2);

#[derive(Clone)]
pub struct Hasher {
    params: Params,
    slots: Arc<Semaphore>,
}

impl Hasher {
    pub fn new(memory_kib: u32, iterations: u32, concurrency: usize) -> Result<Self, AuthError> {
        let params = Params::new(memory_kib, iterations, 1, None)
            .map_err(|e| AuthError::Internal(e.to_string()))?;
        Ok(Self {
            params,
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
        })
    }

    fn argon2(&self) -> Argon2<'static> {
        Argon2::new(Algorithm::Argon2id, Version::V0x13, self.params.clone())
    }

    async fn with_slot<T: Send + 'static>(
        &self,
        work: impl FnOnce(Argon2<'static>) -> T + Send + 'static,
    ) -> Result<T, AuthError> {
        let permit = tokio::time::timeout(HASH_QUEUE_WAIT, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| AuthError::Busy)?
            .map_err(|_| AuthError::Busy)?;
        let argon2 = self.argon2();
        let out = tokio::task::spawn_blocking(move || {
            let out = work(argon2);
            drop(permit);
            out
        })
        .await
        .map_err(|e| AuthError::Internal(e.to_string()))?;
        Ok(out)
    }

    /// A PHC string (`$argon2id$...`) for `password`.
    pub async fn hash(&self, password: String) -> Result<String, AuthError> {
        self.with_slot(move |argon2| {
            let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
                .map_err(|e| AuthError::Internal(e.to_string()))?;
            argon2
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| AuthError::Internal(e.to_string()))
        })
        .await?
    }

    /// Whether `password` matches `phc`. Verifies against a dummy hash when the
    /// account does not exist (`phc` is `None`) so timing does not reveal emails.
    pub async fn verify(&self, password: String, phc: Option<String>) -> Result<bool, AuthError> {
        let dummy = self.dummy_hash();
        self.with_slot(move |argon2| {
            let stored = phc.as_deref().unwrap_or(&dummy);
            let Ok(parsed) = PasswordHash::new(stored) else {
                return false;
            };
            argon2.verify_password(password.as_bytes(), &parsed).is_ok() && phc.is_some()
        })
        .await
    }

    fn dummy_hash(&self) -> String {
        // A fixed, valid hash of a password nobody has; its cost follows `params`.
        let salt = SaltString::encode_b64(b"atrium-dummy-salt").expect("static salt");
        format!(
            "$argon2id$v=19$m={},t={},p=1${}$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            self.params.m_cost(),
            self.params.t_cost(),
            salt.as_str()
        )
    }
}

/// The `Bearer` token of an `Authorization` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_then_verify() {
        let h = Hasher::new(1024, 1, 2).unwrap();
        let phc = h.hash("correct horse".into()).await.unwrap();
        assert!(phc.starts_with("$argon2id$"));
        assert!(h
            .verify("correct horse".into(), Some(phc.clone()))
            .await
            .unwrap());
        assert!(!h.verify("wrong horse".into(), Some(phc)).await.unwrap());
        assert!(!h.verify("anything".into(), None).await.unwrap());
    }

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
    }
}
