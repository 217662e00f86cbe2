//! API keys and app-token revocations.

use crate::ids::{digest, new_secret};
use crate::store::{ApiKey, Revocation, Store, StoreError};

/// API keys: found by the digest of their secret only, listed, deleted once.
pub async fn api_keys_by_digest(store: &dyn Store) {
    let secret = format!("atk_{}", new_secret());
    let key = ApiKey {
        id: new_secret()[..12].to_string(),
        name: "backend".into(),
        scopes: vec!["revoke".into(), "server".into()],
        created_at: 1_700_000_000_000,
    };
    store.create_api_key(&key, digest(&secret)).await.unwrap();
    assert_eq!(store.api_key(digest(&secret)).await.unwrap(), key);
    assert!(matches!(
        store.api_key(digest("atk_other")).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.create_api_key(&key, digest("atk_x")).await,
        Err(StoreError::Conflict)
    ));
    assert!(store.api_keys().await.unwrap().contains(&key));
    store.delete_api_key(&key.id).await.unwrap();
    assert!(matches!(
        store.delete_api_key(&key.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.api_key(digest(&secret)).await,
        Err(StoreError::NotFound)
    ));
}

/// Revocations: kept until they end, a later one of the same `sub` wins.
pub async fn revocations_last_until_they_end(store: &dyn Store) {
    let sub = new_secret();
    let jti = new_secret();
    let far = crate::clock::unix_ms() + 3_600_000;
    let r = Revocation {
        sub: Some(sub.clone()),
        jti: None,
        at: 100,
    };
    store.add_revocation(&r, far).await.unwrap();
    let later = Revocation { at: 200, ..r };
    store.add_revocation(&later, far).await.unwrap();
    let gone = Revocation {
        sub: None,
        jti: Some(jti.clone()),
        at: 100,
    };
    store.add_revocation(&gone, 1).await.unwrap();
    let all = store.revocations().await.unwrap();
    let of_sub: Vec<_> = all
        .iter()
        .filter(|(r, _)| r.sub.as_ref() == Some(&sub))
        .collect();
    assert_eq!(of_sub.len(), 1);
    assert_eq!(of_sub[0].0.at, 200);
    assert!(
        !all.iter().any(|(r, _)| r.jti.as_ref() == Some(&jti)),
        "ended"
    );
}
