//! Sign-in limits: nobody can lock a person out, nor exhaust sign-in for others.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_email_or_address_cannot_exhaust_sign_in_for_others() {
    let node = node(&[TRUST_THE_TEST]).await;
    let victim = unique_email("victim");
    signup(&node, &victim).await;
    let bystander = unique_email("bystander");
    signup(&node, &bystander).await;
    let port = node.port;
    let sign_in = |email: String, password: &'static str, from: &'static str| async move {
        signin_from(port, &email, password, from).await
    };
    // Guessing one email's password, from many addresses: its limit on wrong
    // passwords (10 a minute) answers 429 past it ...
    let addresses = [
        "10.0.0.1",
        "10.0.0.2",
        "10.0.0.3",
        "10.0.0.4",
        "10.0.0.5",
        "10.0.0.6",
        "10.0.0.7",
        "10.0.0.8",
        "10.0.0.9",
        "10.0.0.10",
        "10.0.0.11",
        "10.0.0.12",
    ];
    let mut codes = Vec::new();
    for from in addresses {
        codes.push(sign_in(victim.clone(), "wrong password", from).await.status);
    }
    assert_eq!(codes.iter().filter(|c| **c == 401).count(), 10, "{codes:?}");
    assert!(codes[10..].iter().all(|c| *c == 429), "{codes:?}");
    // ... but never to the right password.
    sign_in(victim.clone(), PASSWORD, "10.0.0.13")
        .await
        .assert_status(200);
    // Another email signs in fine from a fresh address.
    sign_in(bystander.clone(), PASSWORD, "10.9.9.9")
        .await
        .assert_status(200);

    // One address trying many emails: its limit (20 a minute) bites, and
    // another address still signs in.
    let mut codes = Vec::new();
    for i in 0..25 {
        codes.push(
            sign_in(
                format!("guess{i}@example.test"),
                "wrong password",
                "10.5.5.5",
            )
            .await
            .status,
        );
    }
    assert!(codes[..20].iter().all(|c| *c == 401), "{codes:?}");
    let r = sign_in(
        "guess99@example.test".to_string(),
        "wrong password",
        "10.5.5.5",
    )
    .await;
    r.assert_error(429, "rate-limited");
    sign_in(bystander, PASSWORD, "10.8.8.8")
        .await
        .assert_status(200);
}

/// The review's lockout: wrong passwords for someone's email, from one address
/// and then from many, never keep the owner's right password out (it was 429
/// after 10 wrong ones from anywhere). The guesser's own address is what runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_can_lock_a_person_out_of_sign_in() {
    let node = node(&[TRUST_THE_TEST]).await;
    let victim = unique_email("victim");
    signup(&node, &victim).await;
    let sign_in = |password: &'static str, from: String| {
        let node = &node;
        let email = victim.clone();
        async move { signin_from(node.port, &email, password, &from).await }
    };
    // One address guesses: 10 wrong passwords, then its (address, email) limit.
    let mut codes = Vec::new();
    for _ in 0..15 {
        codes.push(sign_in("wrong password", "10.66.0.1".into()).await.status);
    }
    assert!(codes[..10].iter().all(|c| *c == 401), "{codes:?}");
    assert!(codes[10..].iter().all(|c| *c == 429), "{codes:?}");
    let r = sign_in("wrong password", "10.66.0.1".into()).await;
    r.assert_error(429, "rate-limited");
    assert!(
        r.header("retry-after").is_some(),
        "429 says when to come back"
    );
    // The owner, elsewhere, signs in at once.
    let started = Instant::now();
    sign_in(PASSWORD, "10.77.0.1".into())
        .await
        .assert_status(200);
    // Many addresses guess (each once): past the email's failure limit the
    // wrong ones get 429; the owner still signs in, from a new address and from
    // one of the guessers' (shared NAT).
    let mut codes = Vec::new();
    for i in 0..20 {
        codes.push(
            sign_in("wrong password", format!("10.88.0.{i}"))
                .await
                .status,
        );
    }
    assert!(codes.iter().all(|c| *c == 401 || *c == 429), "{codes:?}");
    assert!(codes.contains(&429), "{codes:?}");
    sign_in(PASSWORD, "10.77.0.2".into())
        .await
        .assert_status(200);
    sign_in(PASSWORD, "10.88.0.3".into())
        .await
        .assert_status(200);
    figure(
        json!({"case": "sign-in lockout", "wrong_from_one": 15, "wrong_from_many": 20,
               "owner_answers": [200, 200, 200], "owner_ms": started.elapsed().as_millis()}),
    );
}

/// Per-address limits count an IPv6 client by its /64: twenty-one sign-ins from
/// twenty-one addresses of one /64 (through a trusted proxy) meet the address
/// limit of 20 a minute, while another /64 is not affected (before: every IPv6
/// address was a client of its own, so the limit never bit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv6_addresses_of_one_64_share_the_address_limit() {
    let node = node(&[TRUST_THE_TEST]).await;
    let sign_in = |i: usize, from: String| {
        let node = &node;
        async move {
            let email = format!("v6-{i}@example.test");
            signin_from(node.port, &email, "wrong password", &from).await
        }
    };
    let mut codes = Vec::new();
    for i in 0..21 {
        codes.push(
            sign_in(i, format!("2001:db8:5:6::{:x}", i + 1))
                .await
                .status,
        );
    }
    assert!(codes[..20].iter().all(|c| *c == 401), "{codes:?}");
    assert_eq!(codes[20], 429, "{codes:?}");
    sign_in(99, "2001:db8:5:6:ffff:ffff:ffff:ffff".into())
        .await
        .assert_error(429, "rate-limited");
    sign_in(100, "2001:db8:5:7::1".into())
        .await
        .assert_status(401);
}

/// A sign-in's email is kept in the per-(address, email) limiter only when it could be an
/// email (at most 254 bytes): one of 60 KB, kept twice as the table's key, let one request
/// from each of many addresses hold about 120 KB for good (the twelfth review: gigabytes at
/// the table's 100,000 keys). Each is still a bad credential, counted for its address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_with_huge_emails_from_many_addresses_keep_nothing() {
    let node = node(&[TRUST_THE_TEST]).await;
    let rss = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", node.pid())).unwrap();
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .unwrap();
        line.trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    let email = format!("{}@example.test", "a".repeat(60_000));
    // Warm the node's buffers with a few, then measure 600 more, each from its own address.
    for n in 0..10 {
        let from = format!("10.2.0.{n}");
        signin_from(node.port, &email, "wrong password", &from)
            .await
            .assert_error(401, "bad-credentials");
    }
    let before = rss();
    for n in 0..600u32 {
        let from = format!("10.1.{}.{}", n / 250, n % 250);
        signin_from(node.port, &email, "wrong password", &from)
            .await
            .assert_error(401, "bad-credentials");
    }
    let grown_mib = rss().saturating_sub(before) as f64 / 1024.0;
    figure(
        json!({"case": "600 sign-ins with a 60 KB email, each from its own address",
                  "rss_growth_mib": (grown_mib * 10.0).round() / 10.0}),
    );
    assert!(
        grown_mib < 16.0,
        "600 sign-ins with a 60 KB email grew the node by {grown_mib:.1} MiB"
    );
    // The address's own limit still counts them: the 21st from one address in a minute is 429.
    let mut codes = Vec::new();
    for _ in 0..21 {
        codes.push(signin_from(node.port, &email, "x", "10.3.0.1").await.status);
    }
    assert_eq!(codes.last(), Some(&429), "{codes:?}");
}

/// One sign-up claiming to come from `from` (the node trusts the test as its proxy).
async fn signup_from(node: &Node, email: &str, from: &str) -> Resp {
    let body = json!({"email": email, "password": PASSWORD, "name": "Someone"}).to_string();
    http(
        node,
        "POST",
        "/api/signup",
        &[("x-forwarded-for", from)],
        Some(body.into_bytes()),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admins_email_is_signed_up_only_from_the_nodes_own_machine() {
    let admin = unique_email("kadmin");
    let node = node(&[TRUST_THE_TEST, ("ATRIUM_ADMINS", admin.as_str())]).await;
    let refused = |r: Resp| {
        r.assert_status(403);
        assert_eq!(r.body()["error"]["code"], "forbidden", "{}", r.text);
    };
    // From the internet, through the trusted proxy, the admin's email is refused and nothing
    // is made; so is a spelling the store would take for it (U+212A KELVIN SIGN lowercases
    // to `k`) ...
    for from in ["203.0.113.9", "2001:db8::9"] {
        refused(signup_from(&node, &admin.to_uppercase(), from).await);
    }
    refused(signup_from(&node, &admin.replacen('k', "\u{212A}", 1), "203.0.113.9").await);
    assert_eq!(signin_answer(&node, &admin, PASSWORD).await.status, 401);
    // Asking again and again from many addresses is refused each time and does not spend
    // the email's own rate, or the operator's sign-up would be answered 429.
    for n in 0..12 {
        refused(signup_from(&node, &admin, &format!("198.51.100.{n}")).await);
    }
    // ... while anyone else signs up from there as ever ...
    signup_from(&node, &unique_email("someone"), "203.0.113.9")
        .await
        .assert_status(201);
    // ... and the operator, on the node's machine, makes the admin.
    let local = signup_from(&node, &admin, "127.0.0.1").await;
    local.assert_status(201);
    assert_eq!(local.body()["account"]["admin"], true, "{}", local.text);

    // A local proxy the node does not trust (a sidecar) forwards others: whatever it says,
    // its callers are not on the node's machine.
    let other = unique_email("admin");
    let untrusting = super::node(&[("ATRIUM_ADMINS", other.as_str())]).await;
    refused(signup_from(&untrusting, &other, "127.0.0.1").await);
    refused(signup_from(&untrusting, &other, "198.51.100.7").await);
    // So is one that says so another way (`Forwarded`), or a mesh's sidecar (Linkerd's).
    for (header, value) in [("forwarded", "for=198.51.100.7"), ("l5d-client-id", "web")] {
        let body = json!({"email": other, "password": PASSWORD, "name": "Someone"});
        let sent = Some(body.to_string().into_bytes());
        refused(http(&untrusting, "POST", "/api/signup", &[(header, value)], sent).await);
    }
    let (_, account) = signup(&untrusting, &other).await;
    assert_eq!(account["admin"], true);
}
