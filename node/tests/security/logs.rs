//! Secrets and logs: passwords, tokens and keys never reach the logs.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_tokens_and_keys_never_reach_the_logs() {
    for level in ["debug", "trace"] {
        let mut envs: Vec<(&str, &str)> = FAST_HASH.to_vec();
        envs.push(("ATRIUM_LOG", level));
        let node = Node::start(&envs).await;
        let password = format!("pw-{}", secret());
        let email = unique_email("logs");
        let r = signup_answer(&node, &email, &password, "Logs").await;
        r.assert_status(201);
        let token = s(&r.body()["token"]).to_string();
        let wrong = format!("wrong-{}", secret());
        signin_answer(&node, &email, &wrong)
            .await
            .assert_status(401);
        let r = signin_answer(&node, &email, &password).await;
        let token2 = s(&r.body()["token"]).to_string();
        let f = create_file(&node, &token, "Logged", None).await;
        let id = s(&f["id"]).to_string();
        set_link(&node, &token, &id, "edit").await;
        let (view_key, edit_key) = (s(&f["view_key"]).to_string(), s(&f["edit_key"]).to_string());
        get_with_key(&node, &format!("/api/files/{id}"), &view_key)
            .await
            .assert_status(200);
        let bogus_token = secret();
        get(&node, "/api/me", Some(&bogus_token))
            .await
            .assert_status(401);

        let owner_hello = Hello::token(&token);
        let guest_hello = Hello::key(&edit_key);
        let (mut c, _) = Client::join(&node, &id, &owner_hello).await;
        let (mut g, _) = Client::join(&node, &id, &guest_hello).await;
        c.patch_acked(1, vec![put("n", json!({"x": 1}))]).await;
        g.send_json(&json!({"type": "hello", "token": token2, "key": view_key, "client": "x"}))
            .await;
        g.recv_json().await;
        Client::join_expect_close(&node, &id, &Hello::token(&bogus_token), 4001).await;
        let rotated = rotate_keys(&node, &token, &id).await;
        let new_keys = [
            s(&rotated.body()["view_key"]).to_string(),
            s(&rotated.body()["edit_key"]).to_string(),
        ];
        g.expect_close(4003).await;
        send_empty(&node, "POST", "/api/signout", Some(&token))
            .await
            .assert_status(204);
        c.expect_close(4001).await;
        tokio::time::sleep(Duration::from_millis(300)).await;

        let log = node.log();
        assert!(
            log.lines().count() > 3,
            "the node logged almost nothing at {level}:\n{log}"
        );
        let secrets = [
            ("password", password.as_str()),
            ("wrong password", wrong.as_str()),
            ("token", token.as_str()),
            ("second token", token2.as_str()),
            ("bogus token", bogus_token.as_str()),
            ("view key", view_key.as_str()),
            ("edit key", edit_key.as_str()),
            ("new view key", new_keys[0].as_str()),
            ("new edit key", new_keys[1].as_str()),
            ("owner client id", owner_hello.client.as_str()),
            ("guest client id", guest_hello.client.as_str()),
        ];
        for (what, secret) in secrets {
            assert!(
                !log.contains(secret),
                "the {what} appears in the {level} log:\n{log}"
            );
        }
        figure(
            json!({"case": "secrets in logs", "level": level, "log_lines": log.lines().count(), "secrets_checked": secrets.len(), "found": 0}),
        );
    }
}

/// A node listing an admin's email with no account yet says so at start, and how to make it
/// (from the node's own machine), and stops saying so once the account exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_admin_without_an_account_is_warned_of_at_start() {
    let email = unique_email("unclaimed");
    let mut envs: Vec<(&str, &str)> = FAST_HASH.to_vec();
    envs.push(("ATRIUM_ADMINS", email.as_str()));
    let data = tempfile::tempdir().expect("a data folder");
    let node = Node::start_in(data.path(), &envs).await;
    let warned = |log: &str| log.contains("ATRIUM_ADMINS lists an email with no account yet");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !warned(&node.log()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(warned(&node.log()), "no warning at start:\n{}", node.log());
    signup_answer(&node, &email, "a long enough password", "Admin")
        .await
        .assert_status(201);
    // Started again on the same data, once the account exists: no warning.
    drop(node);
    let again = Node::start_in(data.path(), &envs).await;
    get(&again, "/health", None).await.assert_status(200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = again.log();
    assert!(!warned(&log), "warned of a claimed email:\n{log}");
}
