use std::time::Duration;

use super::*;
use crate::options::testing::spawned as options;

#[test]
fn documents_have_pages_of_twenty_rectangles() {
    let doc = document(2);
    let doc = doc.as_object().unwrap();
    assert_eq!(doc.len(), 2 + 40);
    assert_eq!(doc["p2"], json!({"type": "page", "name": "Page 2"}));
    let r = &doc["r-p2-19"];
    assert_eq!(r["type"], "rect");
    assert_eq!(r["page"], "p2");
    for k in ["x", "y", "w", "h"] {
        assert!(r[k].is_number(), "{k}");
    }
    assert!(r["fill"].is_string());
}

#[test]
fn every_tenth_person_of_each_file_edits() {
    let seats: Vec<bool> = (0..20).map(|s| is_editor(s, 0.1)).collect();
    assert_eq!(seats.iter().filter(|e| **e).count(), 2);
    assert!(seats[0] && seats[10]);
    assert!((0..7).all(|s| is_editor(s, 1.0)));
    assert!((0..7).all(|s| !is_editor(s, 0.0)));
    assert_eq!((0..100).filter(|s| is_editor(*s, 0.25)).count(), 25);
}

#[test]
fn clients_spread_over_files_pages_and_accounts() {
    let o = options(&[
        "--users",
        "1000",
        "--files",
        "100",
        "--accounts",
        "5",
        "--per-account",
        "10",
    ]);
    let plan = plan(&o);
    assert_eq!(plan.len(), 1000);
    for f in 0..100 {
        let people: Vec<_> = plan.iter().filter(|c| c.file == f).collect();
        assert_eq!(people.len(), 10);
        assert_eq!(people.iter().filter(|c| c.editor).count(), 1);
        assert_eq!(people.iter().filter(|c| c.page == 1).count(), 5);
    }
    let signed_in: Vec<_> = plan.iter().filter_map(|c| c.account).collect();
    assert_eq!(signed_in.len(), 50);
    assert!((0..5).all(|a| signed_in.iter().filter(|x| **x == a).count() == 10));
    assert!(plan[..50].iter().all(|c| c.account.is_some()));
    assert!(plan
        .iter()
        .all(|c| c.rect.starts_with(&format!("r-p{}-", c.page + 1))));
}

#[test]
fn random_ids_are_long_and_distinct() {
    let a = random_id(24);
    assert_eq!(a.len(), 24);
    assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(a, random_id(24));
}

/// A node that answers its first two requests 503 with `Retry-After: 1` (hashing busy),
/// then 201: setup comes back after the wait instead of failing the run (CI's run of
/// `server_patches` failed at sign-up on such a 503).
#[tokio::test]
async fn setup_comes_back_when_the_node_says_when() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint =
        crate::http::Endpoint::from_url(&format!("http://{}", listener.local_addr().unwrap()));
    let node = tokio::spawn(async move {
        for n in 0..3 {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 4096];
            let _ = socket.read(&mut request).await.unwrap();
            let answer = if n < 2 {
                let body =
                    r#"{"error":{"code":"unavailable","message":"too many sign-ins at once"}}"#;
                format!(
                    "HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            } else {
                let body = r#"{"token":"t0"}"#;
                format!(
                    "HTTP/1.1 201 Created\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            };
            socket.write_all(answer.as_bytes()).await.unwrap();
        }
    });
    let start = std::time::Instant::now();
    let token = api::sign_up(&endpoint, "run", 1).await.expect("sign-up");
    assert_eq!(token, "t0");
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    node.await.unwrap();
}
