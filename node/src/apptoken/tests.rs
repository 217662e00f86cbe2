//! The verifier against real signed tokens of each algorithm, and the hostile ones.

use std::time::Duration;

use atrium_testkit::jwt::{self, key_pair, Algorithm, JwksServer, Minter};
use serde_json::{json, Value};

use super::*;
use crate::ids::FileId;

const ISS: &str = "https://app.example.test";
const AUD: &str = "atrium";
const SECRET: &[u8] = b"an hs256 secret of at least thirty-two bytes";

fn source() -> KeySource {
    KeySource {
        issuer: ISS.into(),
        audience: AUD.into(),
        skew_s: 5,
        jwks_refresh: Duration::from_secs(300),
        jwks_min_refetch: Duration::from_millis(0),
        jwks_keep: Duration::from_secs(3600),
        ..KeySource::default()
    }
}

fn verifier(source: KeySource) -> Verifier {
    Verifier::new(source, Revocations::new(Duration::from_secs(3600))).unwrap()
}

fn claims(sub: &str) -> Value {
    jwt::claims(
        ISS,
        AUD,
        sub,
        600,
        json!({"doc_1": "edit", "team_9-*": "view"}),
    )
}

fn with_pem(pair: &jwt::KeyPair) -> KeySource {
    let mut s = source();
    s.pem_keys
        .push(KeySource::read_pem("test", &pair.public_pem).unwrap());
    s
}

#[tokio::test]
async fn every_algorithm_verifies_and_reads_the_grant() {
    let hs = verifier(KeySource {
        hs256_secret: Some(SECRET.to_vec()),
        ..source()
    });
    let c = hs
        .verify(&Minter::hs256(SECRET).sign(&claims("ann")))
        .await
        .unwrap();
    assert_eq!(c.sub, "ann");
    let f = |s: &str| FileId::parse(s).unwrap();
    assert_eq!(c.level(&f("doc_1")), Some(Level::Edit));
    assert_eq!(c.level(&f("team_9-board")), Some(Level::View));
    assert_eq!(c.level(&f("doc_2")), None);
    for alg in [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA] {
        let pair = key_pair(alg, "k1");
        let v = verifier(with_pem(&pair));
        let token = Minter::of(&pair).sign(&claims("bob"));
        assert_eq!(v.verify(&token).await.unwrap().sub, "bob", "{alg:?}");
        // Another key of the same kind does not verify it.
        let other = key_pair(alg, "k1");
        let token = Minter::of(&other).sign(&claims("bob"));
        assert!(
            matches!(v.verify(&token).await, Err(TokenError::Invalid(_))),
            "{alg:?}"
        );
    }
}

#[tokio::test]
async fn hostile_tokens_are_refused() {
    let pair = key_pair(Algorithm::RS256, "k1");
    let mut s = with_pem(&pair);
    s.hs256_secret = Some(SECRET.to_vec());
    let v = verifier(s);
    let rs = Minter::of(&pair);
    let hs = Minter::hs256(SECRET);
    let mut c = claims("eve");
    c["exp"] = json!(jwt::now_s() - 1);
    assert!(matches!(
        v.verify(&rs.sign(&c)).await,
        Err(TokenError::Expired)
    ));
    let mut c = claims("eve");
    c["nbf"] = json!(jwt::now_s() + 60);
    assert!(matches!(
        v.verify(&rs.sign(&c)).await,
        Err(TokenError::NotYetValid)
    ));
    // Within the skew, `nbf` is fine.
    c["nbf"] = json!(jwt::now_s() + 3);
    assert!(v.verify(&rs.sign(&c)).await.is_ok());
    let mut c = claims("eve");
    c["aud"] = json!("someone-else");
    assert!(v.verify(&hs.sign(&c)).await.is_err());
    let mut c = claims("eve");
    c["iss"] = json!("https://evil.example");
    assert!(v.verify(&hs.sign(&c)).await.is_err());
    let mut c = claims("eve");
    c.as_object_mut().unwrap().remove("exp");
    assert!(v.verify(&hs.sign(&c)).await.is_err(), "exp is required");
    // Wrong signature: a good token with its signature from another token.
    let a = hs.sign(&claims("eve"));
    let b = Minter::hs256(b"another secret, also thirty-two bytes long").sign(&claims("eve"));
    let forged = format!(
        "{}.{}",
        a.rsplit_once('.').unwrap().0,
        b.rsplit_once('.').unwrap().1
    );
    assert!(matches!(
        v.verify(&forged).await,
        Err(TokenError::Invalid(_))
    ));
    // `alg: none`.
    assert!(v.verify(&jwt::unsigned(&claims("eve"))).await.is_err());
    // HS/RS confusion: the RSA public key (PEM and DER-ish bytes) as an HMAC secret.
    let confused = jwt::hs256_with(&pair.public_pem, Some("k1"), &claims("eve"));
    assert!(v.verify(&confused).await.is_err());
    let only_rs = verifier(with_pem(&pair));
    assert!(matches!(
        only_rs.verify(&confused).await,
        Err(TokenError::NoKey { .. })
    ));
    // Garbage.
    assert!(v.verify("a.b.c").await.is_err());
    assert!(v.verify("...").await.is_err());
    // A sub that is no id.
    let mut c = claims("eve");
    c["sub"] = json!("");
    assert!(v.verify(&hs.sign(&c)).await.is_err());
    // A grant level that is no level.
    let mut c = claims("eve");
    c["files"] = json!({"doc_1": "own"});
    assert!(v.verify(&hs.sign(&c)).await.is_err());
}

#[tokio::test]
async fn unconfigured_nodes_refuse_app_tokens() {
    let v = verifier(source());
    let t = Minter::hs256(SECRET).sign(&claims("ann"));
    assert!(matches!(v.verify(&t).await, Err(TokenError::NotConfigured)));
    assert!(Verifier::new(
        KeySource {
            hs256_secret: Some(b"short".to_vec()),
            ..source()
        },
        Revocations::new(Duration::from_secs(1))
    )
    .is_err());
    assert!(Verifier::new(
        KeySource {
            hs256_secret: Some(SECRET.to_vec()),
            issuer: String::new(),
            ..source()
        },
        Revocations::new(Duration::from_secs(1))
    )
    .is_err());
}

#[tokio::test]
async fn revoked_subs_and_token_ids_are_refused() {
    let v = verifier(KeySource {
        hs256_secret: Some(SECRET.to_vec()),
        ..source()
    });
    let hs = Minter::hs256(SECRET);
    let old = claims("ann");
    let jti = old["jti"].as_str().unwrap().to_owned();
    v.revocations().add(&Revocation {
        sub: None,
        jti: Some(jti),
        at: jwt::now_s(),
    });
    assert!(matches!(
        v.verify(&hs.sign(&old)).await,
        Err(TokenError::Revoked)
    ));
    assert!(v.verify(&hs.sign(&claims("ann"))).await.is_ok());
    v.revocations().add(&Revocation {
        sub: Some("ann".into()),
        jti: None,
        at: jwt::now_s(),
    });
    assert!(matches!(
        v.verify(&hs.sign(&claims("ann"))).await,
        Err(TokenError::Revoked)
    ));
    // A token issued after the revocation works (the app signed the person in again).
    let mut later = claims("ann");
    later["iat"] = json!(jwt::now_s() + 1);
    assert!(v.verify(&hs.sign(&later)).await.is_ok());
}

#[tokio::test]
async fn a_jwks_is_fetched_on_an_unknown_kid_and_keeps_retired_keys() {
    let k1 = key_pair(Algorithm::ES256, "k1");
    let k2 = key_pair(Algorithm::EdDSA, "k2");
    let server = JwksServer::start(vec![k1.jwk.clone()]).await;
    let mut s = source();
    s.jwks_url = Some(server.url());
    s.jwks_min_refetch = Duration::from_millis(300);
    let v = verifier(s);
    let t1 = Minter::of(&k1).sign(&claims("ann"));
    assert!(v.verify(&t1).await.is_ok());
    assert_eq!(server.fetches(), 1);
    assert!(v.verify(&t1).await.is_ok());
    assert_eq!(server.fetches(), 1, "cached");
    // Rotation: k2 comes, k1 leaves.
    server.set_keys(vec![k2.jwk.clone()]);
    tokio::time::sleep(Duration::from_millis(350)).await;
    let t2 = Minter::of(&k2).sign(&claims("ann"));
    assert!(v.verify(&t2).await.is_ok(), "an unknown kid fetches again");
    assert_eq!(server.fetches(), 2);
    assert!(v.verify(&t1).await.is_ok(), "the retired key is kept");
    // Unknown kids fetch at most once per min_refetch.
    let k3 = key_pair(Algorithm::RS256, "k3");
    let t3 = Minter::of(&k3).sign(&claims("ann"));
    assert!(v.verify(&t3).await.is_err());
    assert!(v.verify(&t3).await.is_err());
    assert!(server.fetches() <= 3, "{}", server.fetches());
    // A symmetric key in a JWKS is never used.
    server.set_keys(vec![
        json!({"kty": "oct", "k": "c2VjcmV0", "kid": "s", "alg": "HS256"}),
    ]);
    tokio::time::sleep(Duration::from_millis(350)).await;
    let t = jwt::hs256_with(b"secret", Some("s"), &claims("ann"));
    assert!(v.verify(&t).await.is_err());
}

#[test]
fn tokens_tell_themselves_apart() {
    assert!(is_app_token("eyJ.eyJ.sig"));
    assert!(!is_app_token(&crate::ids::new_secret()));
    assert!(!is_app_token("atk_abc"));
}

#[test]
fn owners_of_app_files_never_meet_atrium_accounts() {
    assert_eq!(owner_for(Some("user_1")).as_str(), "sub-user_1");
    assert_eq!(owner_for(None).as_str(), "app-");
    let long = owner_for(Some("auth0|0123456789abcdef"));
    assert!(long.as_str().starts_with("sbh-"), "{long}");
}

/// A node takes at most `MAX_REVOCATIONS` of its own, and those forgotten make room again;
/// each costs the same whatever its claim's length (held by digest).
#[test]
fn revocations_are_bounded_and_forgotten() {
    use super::live::{Revocation, MAX_REVOCATIONS};
    let revocations = Revocations::new(Duration::from_secs(3600));
    let now = crate::clock::unix_ms();
    let long = "j".repeat(256);
    let fill = |until: i64| {
        for n in 0..MAX_REVOCATIONS {
            let jti = Some(format!("{long}{n}"));
            let at = now / 1000;
            revocations.add_until(&Revocation { sub: None, jti, at }, until);
        }
    };
    // Already past their time: they are swept, not counted.
    fill(now - 1);
    assert!(revocations.has_room(), "forgotten revocations take no room");
    fill(now + 3_600_000);
    assert!(!revocations.has_room(), "full at the bound");
}
