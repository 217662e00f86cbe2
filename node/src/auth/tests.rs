use argon2::Argon2;

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

/// Hashes stored before the areas were reused (argon2's own `PasswordHasher`) still
/// verify, at their own cost; ours verify with argon2's own verifier.
#[tokio::test]
async fn hashes_are_the_standard_phc_both_ways() {
    use argon2::password_hash::{PasswordHasher, PasswordVerifier};
    let h = Hasher::new(1024, 1, 2).unwrap();
    let other_cost = Params::new(2048, 2, 1, None).unwrap();
    let theirs = Argon2::new(Algorithm::Argon2id, Version::V0x13, other_cost)
        .hash_password(
            b"old password",
            &SaltString::encode_b64(b"0123456789abcdef").unwrap(),
        )
        .unwrap()
        .to_string();
    assert!(h
        .verify("old password".into(), Some(theirs.clone()))
        .await
        .unwrap());
    assert!(!h.verify("old passwore".into(), Some(theirs)).await.unwrap());

    let ours = h.hash("new password".into()).await.unwrap();
    let parsed = PasswordHash::new(&ours).unwrap();
    assert!(Argon2::default()
        .verify_password(b"new password", &parsed)
        .is_ok());
    assert!(ours.starts_with("$argon2id$v=19$m=1024,t=1,p=1$"));
    // Not argon2id, or not a PHC string at all: never a match.
    let argon2i = ours.replace("$argon2id$", "$argon2i$");
    assert!(!h
        .verify("new password".into(), Some(argon2i))
        .await
        .unwrap());
    assert!(!h
        .verify("new password".into(), Some("plain".into()))
        .await
        .unwrap());
}

/// Areas are pooled across the hashing threads: as many as hashes ran at once, however
/// many threads took turns (one area per thread would hold 19 MiB on each for good).
#[tokio::test]
async fn hashes_share_as_few_memory_areas_as_ran_at_once() {
    let h = Hasher::new(1024, 1, 2).unwrap();
    for i in 0..6 {
        h.hash(format!("password {i}")).await.unwrap();
    }
    assert_eq!(h.areas.lock().unwrap().len(), 1, "one at a time: one area");
    let runs: Vec<_> = (0..8).map(|i| h.hash(format!("password {i}"))).collect();
    for r in futures_util::future::join_all(runs).await {
        r.unwrap();
    }
    let areas = h.areas.lock().unwrap();
    assert!(
        !areas.is_empty() && areas.len() <= 2,
        "{} areas",
        areas.len()
    );
    assert!(areas.iter().all(|a| a.len() == 1024));
}

#[test]
fn bearer_tokens() {
    assert_eq!(bearer("Bearer abc"), Some("abc"));
    assert_eq!(bearer("bearer  abc "), Some("abc"));
    assert_eq!(bearer("Basic abc"), None);
    assert_eq!(bearer("Bearer "), None);
}

/// Hashing runs on threads of its own at the bulk lane's lower priority, so a flood of
/// sign-ups takes what relaying leaves; a panic there is an error, and the thread lives on.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn hashes_run_on_niced_threads_of_their_own() {
    let h = Hasher::new(1024, 1, 2).unwrap();
    let (name, nice) = h
        .with_slot(Line::Later, |_| {
            #[allow(unsafe_code)]
            // SAFETY: getpriority takes integers and reads this thread's nice value.
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            (std::thread::current().name().map(str::to_owned), nice)
        })
        .await
        .unwrap();
    assert!(name.unwrap_or_default().starts_with("atrium-hash-"));
    assert_eq!(nice, crate::priority::LANE_NICENESS);
    let panicked = h
        .with_slot(Line::First, |_| -> u8 { panic!("a bad hash") })
        .await;
    assert!(matches!(panicked, Err(AuthError::Internal(_))));
    let phc = h.hash("still here".into()).await.unwrap();
    assert!(h.verify("still here".into(), Some(phc)).await.unwrap());
}
