//! Secrets and signatures of the Standard Webhooks specification: a secret is
//! `whsec_` and the base64 of its key; a message is signed as
//! `v1,<base64 of HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")>`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::RngCore;

/// The prefix of every secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// Shortest and longest key a secret may hold (the specification asks 24 to 64 bytes).
const KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// A new secret with a 32-byte random key.
pub fn new_secret() -> String {
    let mut key = [0u8; 32];
    rand::rng().fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// The key of a secret, or why it is not one.
pub fn secret_key(secret: &str) -> Result<Vec<u8>, &'static str> {
    let b64 = secret
        .strip_prefix(SECRET_PREFIX)
        .ok_or("a secret must start with `whsec_`")?;
    let key = STANDARD
        .decode(b64)
        .map_err(|_| "a secret must be `whsec_` and base64")?;
    if !KEY_BYTES.contains(&key.len()) {
        return Err("a secret's key must be 24 to 64 bytes");
    }
    Ok(key)
}

/// The `webhook-signature` header's value for one message.
pub fn signature(key: &[u8], msg_id: &str, timestamp: i64, body: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let mut ctx = ring::hmac::Context::with_key(&key);
    ctx.update(msg_id.as_bytes());
    ctx.update(b".");
    ctx.update(timestamp.to_string().as_bytes());
    ctx.update(b".");
    ctx.update(body.as_bytes());
    format!("v1,{}", STANDARD.encode(ctx.sign().as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the specification's reference libraries.
    #[test]
    fn signs_as_the_reference_does() {
        let key = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let sig = signature(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_are_whsec_and_base64_of_enough_bytes() {
        let s = new_secret();
        assert_eq!(secret_key(&s).unwrap().len(), 32);
        assert!(secret_key("abc").is_err());
        assert!(secret_key("whsec_!!!").is_err());
        assert!(secret_key(&format!("whsec_{}", STANDARD.encode([1u8; 8]))).is_err());
    }
}
