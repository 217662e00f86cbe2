//! Sign-in and sign-up rates.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_are_limited_per_email() {
    let node = Node::start(&CHEAP_HASH).await;
    let email = unique_email("target");
    // Sign-ins for one email from one address: 10 a minute (the sign-up is
    // counted per address and per email, not against sign-ins).
    signup(&node, &email).await;
    let wrong = "wrong password!";
    let mut attempts = vec![(email.clone(), wrong, 401, "bad-credentials"); 10];
    attempts.push((email.clone(), PASSWORD, 429, "rate-limited"));
    attempts.push((email.clone(), wrong, 429, "rate-limited"));
    // Another email from the same address is still heard.
    attempts.push((unique_email("other"), PASSWORD, 401, "bad-credentials"));
    for (email, password, status, code) in attempts {
        let r = signin_answer(&node, &email, password).await;
        r.assert_error(status, code);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_and_sign_ups_are_limited_per_address() {
    let node = Node::start(&CHEAP_HASH).await;
    // 20 a minute from one address, each for a different email.
    for i in 0..20 {
        signin_answer(&node, &unique_email(&format!("nobody{i}")), PASSWORD)
            .await
            .assert_error(401, "bad-credentials");
    }
    signin_answer(&node, &unique_email("late"), PASSWORD)
        .await
        .assert_error(429, "rate-limited");
    signup_answer(&node, &unique_email("new"), PASSWORD, "New")
        .await
        .assert_error(429, "rate-limited");
    let text = metrics_text(&node).await;
    assert!(
        counter(&text, "atrium_rate_limited_total", &[]) >= 2.0,
        "refused sign-ins are counted"
    );
}
