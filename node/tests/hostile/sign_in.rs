//! Sign-in floods.

use super::*;

async fn signin_at(port: u16, email: &str, password: &str, from: &str) -> (u16, String) {
    let r = signin_from(port, email, password, from).await;
    let code = r
        .json
        .as_ref()
        .and_then(|b| b["error"]["code"].as_str())
        .unwrap_or("")
        .to_string();
    (r.status, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_floods_are_limited_and_never_slow_the_node() {
    let _serial = SERIAL.lock().await;
    // Real hashing cost (the defaults), and client addresses taken from
    // X-Forwarded-For, so a flood can come "from" many places.
    let node = Node::start(&[TRUST_THE_TEST]).await;
    let email = unique_email("owner");
    let (owner, _) = signup(&node, &email).await;
    let r = Room::of(node, owner).await;
    let port = r.node.port;
    let mut probe = Probe::join(&r).await;
    let base = probe.sample(30).await;
    let mut health_base = Vec::new();
    for _ in 0..20 {
        health_base.push(health_ok(&r.node).await);
    }

    // 1. One address, one email: the limits bite (10 per email a minute).
    let target = unique_email("target");
    let mut one = HashMap::<u16, usize>::new();
    for _ in 0..40 {
        let (status, code) = signin_at(port, &target, "wrong password", "10.1.0.1").await;
        if status == 429 {
            assert_eq!(code, "rate-limited");
        }
        *one.entry(status).or_default() += 1;
    }
    // 10 at once, and one more each 6 s the slow hashes took (a loaded machine).
    let wrong = one.get(&401).copied().unwrap_or(0);
    assert!(
        (10..=13).contains(&wrong),
        "one email, one address: {one:?}"
    );
    assert_eq!(
        one.get(&429),
        Some(&(40 - wrong)),
        "one email, one address: {one:?}"
    );

    // 2. A flood that gets past the limits (a new address and a new email
    //    each time) and lands on password hashing: 64 at once, 400 in all.
    const FLOOD: usize = 400;
    let done = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Mutex::new(HashMap::<u16, usize>::new()));
    let flood = {
        let (done, answers) = (done.clone(), answers.clone());
        tokio::spawn(async move {
            let gate = Arc::new(tokio::sync::Semaphore::new(64));
            let mut tasks = Vec::new();
            let start = Instant::now();
            for i in 0..FLOOD {
                let (gate, answers) = (gate.clone(), answers.clone());
                tasks.push(tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await.expect("gate");
                    let from = format!("10.2.{}.{}", i / 250, i % 250 + 1);
                    let r =
                        signin_from(port, &format!("nobody{i}@flood.test"), "guess guess", &from)
                            .await;
                    // A 503 says when to come back, as every refusal at a bound does.
                    if r.status == 503 {
                        assert!(
                            r.headers.contains_key("retry-after"),
                            "a 503 without Retry-After: {}",
                            r.text
                        );
                    }
                    *answers.lock().unwrap().entry(r.status).or_default() += 1;
                }));
            }
            for t in tasks {
                t.await.expect("sign-in");
            }
            done.store(true, Ordering::SeqCst);
            start.elapsed()
        })
    };
    // A real person signing in from elsewhere during the flood.
    let person = {
        let email = email.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let start = Instant::now();
            let got = signin_at(port, &email, PASSWORD, "192.0.2.7").await;
            (got, start.elapsed())
        })
    };
    let pause = Duration::from_millis(25);
    let (during, health) = probe.sample_with_health(&r.node, &done, 30, pause).await;
    let took = flood.await.expect("flood");
    let ((person_status, _), person_took) = person.await.expect("person");
    let answers = answers.lock().unwrap().clone();
    for status in answers.keys() {
        assert!(
            matches!(status, 401 | 503),
            "a sign-in with a wrong password was answered {status}: {answers:?}"
        );
    }
    // Sign-ins to real accounts are hashed before made-up emails' (the tenth review: 5 of
    // 6 honest sign-ins answered 503 under such a flood from 220 addresses).
    assert_eq!(
        person_status, 200,
        "the real person's sign-in, after {person_took:?}"
    );
    // Not behind the flood's queue: before, it waited out the queue's 2 s and got in (or
    // not) at its end.
    assert!(
        person_took < Duration::from_secs(2),
        "the real person waited {person_took:?} for a hashing slot"
    );
    let (h50, h99, hmax) = (
        percentile(&health, 0.5),
        percentile(&health, 0.99),
        percentile(&health, 1.0),
    );
    assert!(
        hmax < Duration::from_secs(2),
        "/health took {hmax:?} during the flood"
    );
    assert_untouched(&r, &probe, 0, json!({})).await;
    report(
        "sign-in floods (40 from one address for one email; 400 from 400 addresses, 64 at once)",
        &base,
        &during,
        json!({
            "one_address": one, "flood": answers, "flood_seconds": took.as_secs_f64(),
            "hash_concurrency": "the default, half the cores",
            "health_ms": {"base_p50": ms(percentile(&health_base, 0.5)), "p50": ms(h50), "p99": ms(h99), "max": ms(hmax)},
            "person_during_flood": {"status": person_status, "ms": ms(person_took).round()},
            "answer": "429 rate-limited past 10 per email; 401 or 503 under the flood; the real person 200",
        }),
    );
}
