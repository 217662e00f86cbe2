//! Argon2id itself: computing a hash in a reused memory area, and checking a
//! password against a stored PHC string.

use argon2::password_hash::{Output, PasswordHash};
use argon2::{Algorithm, Argon2, Block, Params, Version};

use super::AuthError;

/// Argon2id of `password` with `salt` into `out`, in `area` (grown to the cost's size).
pub(super) fn compute(
    params: &Params,
    version: Version,
    password: &[u8],
    salt: &[u8],
    out: &mut [u8],
    area: &mut Vec<Block>,
) -> Result<(), AuthError> {
    let blocks = params.block_count();
    if area.len() < blocks {
        area.resize(blocks, Block::default());
    }
    Argon2::new(Algorithm::Argon2id, version, params.clone())
        .hash_password_into_with_memory(password, salt, out, &mut area[..blocks])
        .map_err(|e| AuthError::Internal(e.to_string()))
}

/// Whether `password` hashes to the stored Argon2id PHC string (with its own cost, salt and
/// version); the comparison takes the same time wherever the outputs differ.
pub(super) fn matches(stored: &str, password: &[u8], area: &mut Vec<Block>) -> bool {
    let Ok(parsed) = PasswordHash::new(stored) else {
        return false;
    };
    if parsed.algorithm != Algorithm::Argon2id.ident() {
        return false;
    }
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return false;
    };
    let Ok(params) = Params::try_from(&parsed) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from) {
        None => Version::V0x13,
        Some(Ok(v)) => v,
        Some(Err(_)) => return false,
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    if compute(&params, version, password, salt, &mut out, area).is_err() {
        return false;
    }
    // `Output`'s equality is constant-time.
    Output::new(&out).is_ok_and(|computed| computed == expected)
}
