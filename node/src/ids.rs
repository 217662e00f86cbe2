//! Typed ids, parsed once at the edge, and the random secrets the node hands out.
//!
//! Every id on the wire matches `[A-Za-z0-9_-]{1,64}`; secrets (tokens, link keys)
//! carry at least 128 random bits and are stored only as SHA-256 digests where the
//! node never needs them back.

use std::fmt;

use rand::Rng;
use sha2::{Digest, Sha256};

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Whether `s` is a valid id under the contract's rule.
pub fn is_valid_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `len` random base62 characters (5.95 bits each).
pub fn random_string(len: usize) -> String {
    let mut rng = rand::rng();
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A secret of 190 random bits: session tokens and link keys.
pub fn new_secret() -> String {
    random_string(32)
}

/// SHA-256 of a secret; what the store keeps instead of the secret itself.
pub fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Parses an id from outside; `None` when it breaks the id rule.
            pub fn parse(s: &str) -> Option<Self> {
                is_valid_id(s).then(|| Self(s.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A file (and so a room).
    FileId
);
id_type!(
    /// An account.
    AccountId
);
id_type!(
    /// A person in a room: stable for one client in one file while its room lives.
    PersonId
);

impl FileId {
    pub fn generate() -> Self {
        Self(random_string(22))
    }
}

impl AccountId {
    pub fn generate() -> Self {
        Self(random_string(16))
    }
}

impl PersonId {
    pub fn generate() -> Self {
        Self(random_string(10))
    }

    /// The person `client` is in a room whose secret salt is `salt`: the same for the room's
    /// whole life, however often the room forgets the client in between (so `you` stays
    /// stable without a room keeping every client id it has seen), different in another
    /// room, and never telling the client id (a keyed digest of its digest).
    pub fn of_client(salt: &[u8; 16], client: &ClientKey) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(salt);
        hasher.update(client.0);
        let digest = hasher.finalize();
        let chars = digest[..10].iter();
        Self(
            chars
                .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
                .collect(),
        )
    }
}

/// The digest of a client id: rooms and the store key dedupe by it, so the secret
/// client id itself is never kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(pub [u8; 16]);

impl ClientKey {
    pub fn of(client: &str) -> Self {
        let full = digest(client);
        let mut short = [0u8; 16];
        short.copy_from_slice(&full[..16]);
        Self(short)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_rule() {
        assert!(is_valid_id("abc_DEF-123"));
        assert!(is_valid_id(&"a".repeat(64)));
        assert!(!is_valid_id(&"a".repeat(65)));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("../etc"));
        assert!(!is_valid_id("a%00"));
        assert!(!is_valid_id("é"));
        assert!(!is_valid_id("a.b"));
    }

    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let a = FileId::generate();
        let b = FileId::generate();
        assert!(FileId::parse(a.as_str()).is_some());
        assert_ne!(a, b);
        assert_eq!(new_secret().len(), 32);
    }
}
