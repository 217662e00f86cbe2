//! Passwords and sessions: Argon2id hashes computed on threads of their own with a
//! node-wide bound, and session tokens that the store only knows by digest.
//!
//! Each hashing slot reuses one memory area (19 MiB at the default cost) instead of
//! allocating it per hash: freed areas of that size stay in the allocator's
//! per-thread arenas, so a sign-in flood used to leave hundreds of MB resident.
//! Now hashing holds at most `ATRIUM_HASH_CONCURRENCY` areas, allocated once.
//!
//! The hashing threads run at the bulk lane's lower priority (`priority::bulk_thread`):
//! sign-ups from sixty addresses at each one's limit took 0.82 of two cores at the
//! runtime's priority, and a bystander's relay p99 from 1.8 to 14 ms (the ninth review).
//! Niced, they take what relaying leaves.

mod argon;
mod slots;

use std::sync::{mpsc, Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Block, Params, Version};
use tokio::sync::oneshot;

use crate::lane::{niced_threads, Job};

use self::argon::{compute, matches};
use self::slots::{Line, Slots};

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

/// Bytes of a hash this node writes (argon2's default).
const OUTPUT_LEN: usize = 32;

#[derive(Clone)]
pub struct Hasher {
    params: Params,
    slots: Arc<Slots>,
    /// The hashing threads, one per slot, started at the first hash.
    threads: Arc<HashThreads>,
    /// Memory areas of slots not hashing right now (at most one per slot): as many as
    /// hashes ever ran at once, not one per thread that ever hashed.
    areas: Arc<Mutex<Vec<Vec<Block>>>>,
}

/// The hashing threads (`lane::niced_threads`), started at the first hash; they end when
/// the last [`Hasher`] is dropped.
struct HashThreads {
    width: usize,
    jobs: OnceLock<mpsc::Sender<Job>>,
}

impl HashThreads {
    fn send(&self, job: Job) -> Result<(), AuthError> {
        self.jobs
            .get_or_init(|| niced_threads("atrium-hash", self.width))
            .send(job)
            .map_err(|_| AuthError::Internal("the hashing threads stopped".into()))
    }
}

impl Hasher {
    pub fn new(memory_kib: u32, iterations: u32, concurrency: usize) -> Result<Self, AuthError> {
        let params = Params::new(memory_kib, iterations, 1, Some(OUTPUT_LEN))
            .map_err(|e| AuthError::Internal(e.to_string()))?;
        Ok(Self {
            params,
            slots: Slots::new(concurrency),
            threads: Arc::new(HashThreads {
                width: concurrency.max(1),
                jobs: OnceLock::new(),
            }),
            areas: Arc::default(),
        })
    }

    /// Runs `work` on a hashing thread once a slot is free for `line`, with that slot's
    /// memory area.
    async fn with_slot<T: Send + 'static>(
        &self,
        line: Line,
        work: impl FnOnce(&mut Vec<Block>) -> T + Send + 'static,
    ) -> Result<T, AuthError> {
        let permit = self
            .slots
            .take(line, HASH_QUEUE_WAIT)
            .await
            .ok_or(AuthError::Busy)?;
        let (done, answer) = oneshot::channel();
        let areas = self.areas.clone();
        self.threads.send(Box::new(move || {
            let mut area = areas
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop()
                .unwrap_or_default();
            // A panic is the caller's error, not the end of the thread.
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut area)));
            areas
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(area);
            drop(permit);
            let _ = done.send(out);
        }))?;
        match answer.await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(_)) => Err(AuthError::Internal("hashing panicked".into())),
            Err(_) => Err(AuthError::Internal("a hash was lost".into())),
        }
    }

    /// A PHC string (`$argon2id$v=19$m=...,t=...,p=1$salt$hash`) for `password`.
    pub async fn hash(&self, password: String) -> Result<String, AuthError> {
        let params = self.params.clone();
        self.with_slot(Line::Later, move |area| {
            let salt = rand::random::<[u8; 16]>();
            let mut out = [0u8; OUTPUT_LEN];
            compute(
                &params,
                Version::V0x13,
                password.as_bytes(),
                &salt,
                &mut out,
                area,
            )?;
            let internal = |e: argon2::password_hash::Error| AuthError::Internal(e.to_string());
            let salt = SaltString::encode_b64(&salt).map_err(internal)?;
            let phc = PasswordHash {
                algorithm: Algorithm::Argon2id.ident(),
                version: Some(Version::V0x13.into()),
                params: ParamsString::try_from(&params).map_err(internal)?,
                salt: Some(salt.as_salt()),
                hash: Some(Output::new(&out).map_err(internal)?),
            };
            Ok(phc.to_string())
        })
        .await?
    }

    /// Whether `password` matches `phc`. Verifies against a dummy hash when the
    /// account does not exist (`phc` is `None`), so it takes as long; such sign-ins wait
    /// behind those to real accounts for a slot (whether an email has an account is no
    /// secret: a sign-up with it answers 409).
    pub async fn verify(&self, password: String, phc: Option<String>) -> Result<bool, AuthError> {
        let dummy = self.dummy_hash();
        let line = match phc {
            Some(_) => Line::First,
            None => Line::Later,
        };
        self.with_slot(line, move |area| {
            let stored = phc.as_deref().unwrap_or(&dummy);
            matches(stored, password.as_bytes(), area) && phc.is_some()
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
mod tests;
