//! Work on stored versions asked for by many at once: reading a version of a large file and
//! comparing it with the current document (the third review: 50 connections comparing a
//! 12 MB file's versions took a node with a 256 MiB budget to 879 MiB, and it refused all
//! new work for minutes after).

use super::*;

/// Forty connections with the edit key read and compare an 8 MB file's versions for eight
/// seconds: the node stays within its budget, answers 200 or 503 with `Retry-After`, and
/// takes new work at once afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_reads_and_comparisons_of_versions_stay_within_the_budget() {
    let _serial = SERIAL.lock().await;
    const BUDGET_MIB: u64 = 256;
    let budget = format!("{BUDGET_MIB}M");
    // Every asker is one address: its share of document bytes is not what this is about.
    let r = room(&[
        ("ATRIUM_MEMORY_BUDGET", budget.as_str()),
        ("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "0"),
    ])
    .await;
    let file = create_file(&r.node, &r.owner, "Large", Some(huge::large_document())).await;
    let id = s(&file["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "edit").await;
    let key = s(&file["edit_key"]).to_string();
    let named = send_json(
        &r.node,
        "POST",
        &format!("/api/files/{id}/versions"),
        Some(&r.owner),
        &json!({"title": "large"}),
    )
    .await;
    named.assert_status(201);
    let vid = named.body()["id"].as_u64().unwrap();
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let answers = Arc::new(Mutex::new(HashMap::<String, u64>::new()));
    let until = Instant::now() + Duration::from_secs(8);
    let mut askers = Vec::new();
    for n in 0..40 {
        let (port, key, answers) = (r.node.port, key.clone(), answers.clone());
        let path = match n % 2 {
            0 => format!("/api/files/{id}/versions/compare?from={vid}"),
            _ => format!("/api/files/{id}/versions/{vid}"),
        };
        askers.push(tokio::spawn(async move {
            while Instant::now() < until {
                let headers = [("x-atrium-key", key.as_str())];
                let a = atrium_testkit::http::request(port, "GET", &path, &headers, None).await;
                let what = match a.status {
                    503 if a.header("retry-after").is_some() => "503 with Retry-After".to_string(),
                    status => status.to_string(),
                };
                *answers.lock().unwrap().entry(what).or_insert(0) += 1;
                if a.status == 503 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    let mut peak = rss0;
    while askers.iter().any(|a| !a.is_finished()) {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for a in askers {
        a.await.expect("an asker");
    }
    let answers = answers.lock().unwrap().clone();
    // Afterwards: someone opens another file and edits it.
    let other = create_file(&r.node, &r.owner, "After", None).await;
    let (mut c, _) = Client::join(&r.node, s(&other["id"]), &Hello::token(&r.owner)).await;
    c.patch_acked(1, vec![json!({"op": "put", "id": "a", "props": {"x": 1}})])
        .await;
    figure(
        json!({"case": "40 connections read and compare an 8 MB file's versions for 8 s",
                  "budget_mib": BUDGET_MIB, "rss_start_mib": rss0 / 1024,
                  "peak_rss_mib": peak / 1024, "answers": answers}),
    );
    assert!(
        peak / 1024 < BUDGET_MIB,
        "resident memory reached {} MiB ({answers:?})",
        peak / 1024
    );
    let fine = |k: &str| k == "200" || k == "503 with Retry-After";
    assert!(answers.keys().all(|k| fine(k)), "{answers:?}");
    assert!(answers.contains_key("200"), "some were served: {answers:?}");
}
