//! Webhook endpoints and the outbox (docs/webhooks.md).

use serde_json::{json, Value};

use super::logs::{append_one, patches};
use super::support::{new_file, take};
use crate::ids::FileId;
use crate::store::{
    DueQuery, Store, StoreError, WebhookEndpoint, WebhookMessage, WebhookUpdate, EVENT_TYPES,
};
use crate::webhook::event::event;

fn endpoint(id: &str, events: &[&str]) -> WebhookEndpoint {
    WebhookEndpoint {
        id: id.into(),
        url: format!("https://hooks.example.com/{id}"),
        secret: crate::webhook::sign::new_secret(),
        events: events.iter().map(|e| (*e).to_owned()).collect(),
        enabled: true,
        description: String::new(),
        created_at: 1,
    }
}

/// Everything due now, debounce ignored.
async fn due(store: &dyn Store) -> Vec<WebhookMessage> {
    due_with(store, 0).await
}

async fn due_with(store: &dyn Store, debounce_ms: i64) -> Vec<WebhookMessage> {
    store
        .due_webhooks(DueQuery {
            now: crate::clock::unix_ms() + 1,
            debounce_ms,
            limit: 100,
        })
        .await
        .expect("due")
}

fn data(m: &WebhookMessage) -> Value {
    serde_json::from_str::<Value>(&m.body).expect("JSON body")["data"].clone()
}

/// An endpoint stored, and a new file taken and edited to version 3 (its `file.updated`
/// waiting for the endpoint if it wants them): the file and the taker's epoch.
async fn edited_file(store: &dyn Store, endpoint: WebhookEndpoint) -> (FileId, u64) {
    store.create_webhook(&endpoint, 10).await.unwrap();
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    append_one(store, &file, epoch, patches(1, 3, 1))
        .await
        .unwrap();
    (file, epoch)
}

fn person(file: &FileId, kind: &'static str, n: u64) -> crate::store::WebhookEvent {
    event(file, kind, crate::clock::unix_ms(), json!({"n": n}))
}

/// Endpoints: made (up to a cap), listed, changed, disabled and deleted.
pub async fn webhook_endpoints_crud(store: &dyn Store) {
    let a = endpoint("ep_a", EVENT_TYPES);
    store.create_webhook(&a, 2).await.unwrap();
    assert!(matches!(
        store.create_webhook(&a, 5).await,
        Err(StoreError::Conflict)
    ));
    store
        .create_webhook(&endpoint("ep_b", &["room.opened"]), 2)
        .await
        .unwrap();
    assert!(matches!(
        store
            .create_webhook(&endpoint("ep_c", &["room.opened"]), 2)
            .await,
        Err(StoreError::Full)
    ));
    let all = store.webhooks().await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0], a);
    let changed = store
        .update_webhook(
            "ep_a",
            WebhookUpdate {
                enabled: Some(false),
                events: Some(vec!["person.left".into()]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(!changed.enabled);
    assert_eq!(changed.events, vec!["person.left".to_string()]);
    assert_eq!(changed.url, a.url);
    assert!(matches!(
        store
            .update_webhook("ep_none", WebhookUpdate::default())
            .await,
        Err(StoreError::NotFound)
    ));
    let mut replaced = endpoint("ep_b", &["room.closed"]);
    replaced.url = "https://elsewhere.example.com/".into();
    store.put_webhook(&replaced).await.unwrap();
    store
        .put_webhook(&endpoint("static", EVENT_TYPES))
        .await
        .unwrap();
    let all = store.webhooks().await.unwrap();
    assert_eq!(all.len(), 3);
    assert!(all.iter().any(|e| e.url == replaced.url));
    store.delete_webhook("ep_a").await.unwrap();
    assert!(matches!(
        store.delete_webhook("ep_a").await,
        Err(StoreError::NotFound)
    ));
}

/// Events reach the enabled endpoints that want them; each (endpoint, file) is due one
/// message at a time, oldest first; deleting an endpoint drops what waits for it.
pub async fn webhook_outbox_in_order(store: &dyn Store) {
    store
        .create_webhook(&endpoint("ep_all", EVENT_TYPES), 10)
        .await
        .unwrap();
    store
        .create_webhook(&endpoint("ep_left", &["person.left"]), 10)
        .await
        .unwrap();
    let mut off = endpoint("ep_off", EVENT_TYPES);
    off.enabled = false;
    store.create_webhook(&off, 10).await.unwrap();
    let (f1, f2) = (new_file(store).await.1, new_file(store).await.1);
    let events = vec![
        person(&f1, "person.joined", 1),
        person(&f1, "person.left", 2),
        person(&f2, "person.joined", 3),
        person(&f1, "person.joined", 4),
    ];
    assert_eq!(store.record_webhooks(&events).await.unwrap(), 5);
    assert_eq!(store.webhook_depth().await.unwrap(), (5, 0));
    let mut seen: Vec<(String, u64)> = Vec::new();
    loop {
        let due = due(store).await;
        if due.is_empty() {
            break;
        }
        // Heads only: never two of one (endpoint, file).
        let mut pairs: Vec<_> = due.iter().map(|m| (&m.endpoint, &m.file)).collect();
        pairs.sort();
        pairs.dedup();
        assert_eq!(pairs.len(), due.len());
        for m in &due {
            assert!(store.webhook_delivered(m.id, m.seq).await.unwrap());
            seen.push((m.endpoint.clone(), data(m)["n"].as_u64().unwrap()));
        }
    }
    let of = |ep: &str| -> Vec<u64> {
        seen.iter()
            .filter(|(e, _)| e == ep)
            .map(|(_, n)| *n)
            .collect()
    };
    let mut all = of("ep_all");
    // Per file in order: f1 saw 1, 2, 4 in that order.
    all.retain(|n| *n != 3);
    assert_eq!(all, vec![1, 2, 4]);
    assert_eq!(of("ep_left"), vec![2]);
    assert!(of("ep_off").is_empty());

    // What waits for an endpoint that is then disabled is kept, not sent.
    store.record_webhooks(&events[..1]).await.unwrap();
    let off = WebhookUpdate {
        enabled: Some(false),
        ..Default::default()
    };
    store.update_webhook("ep_all", off).await.unwrap();
    assert!(due(store).await.is_empty());
    assert_eq!(store.webhook_depth().await.unwrap(), (1, 0));
    let on = WebhookUpdate {
        enabled: Some(true),
        ..Default::default()
    };
    store.update_webhook("ep_all", on).await.unwrap();
    let back = due(store).await;
    assert_eq!(back.len(), 1);
    assert!(store
        .webhook_delivered(back[0].id, back[0].seq)
        .await
        .unwrap());
    assert_eq!(store.webhook_depth().await.unwrap(), (0, 0));

    store.record_webhooks(&events[..1]).await.unwrap();
    store.delete_webhook("ep_all").await.unwrap();
    assert_eq!(store.webhook_depth().await.unwrap(), (0, 0));
}

/// `file.updated` is recorded by the append itself, once per file while it waits
/// (updated in place with the newest version), due only after the debounce; a
/// delivery of an older reading deletes nothing; a fenced append records nothing.
pub async fn file_updated_rides_on_the_append(store: &dyn Store) {
    let (file, epoch) = edited_file(store, endpoint("ep_files", &["file.updated"])).await;
    assert!(due_with(store, 3_600_000).await.is_empty(), "debounced");
    let first = due(store).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].kind, "file.updated");
    assert_eq!(data(&first[0])["version"], 3);
    assert_eq!(data(&first[0])["file_id"], file.as_str());

    append_one(store, &file, epoch, patches(4, 5, 1))
        .await
        .unwrap();
    let second = due(store).await;
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].id, first[0].id, "updated in place");
    assert_ne!(second[0].msg_id, first[0].msg_id, "a new message");
    assert_eq!(data(&second[0])["version"], 5);
    assert!(!store
        .webhook_delivered(first[0].id, first[0].seq)
        .await
        .unwrap());
    assert!(
        due_with(store, 3_600_000).await.is_empty(),
        "sent while it changed: debounced again"
    );
    assert!(store
        .webhook_delivered(second[0].id, second[0].seq)
        .await
        .unwrap());
    assert!(due(store).await.is_empty());

    // Another node took the file: the old writer's append is fenced, and records nothing.
    take(store, &file).await;
    assert!(append_one(store, &file, epoch, patches(6, 6, 1))
        .await
        .is_err());
    assert!(due(store).await.is_empty());
    assert_eq!(store.webhook_depth().await.unwrap(), (0, 0));
}

/// Retries wait their turn; failed messages are kept, then forgotten; an endpoint's
/// outbox is bounded by dropping its oldest messages.
pub async fn webhook_retries_failures_and_bounds(store: &dyn Store) {
    store
        .create_webhook(&endpoint("ep_r", EVENT_TYPES), 10)
        .await
        .unwrap();
    let (_, file) = new_file(store).await;
    let events: Vec<_> = (1..=5).map(|n| person(&file, "room.opened", n)).collect();
    store.record_webhooks(&events).await.unwrap();
    let head = due(store).await.remove(0);
    assert_eq!(data(&head)["n"], 1);
    store
        .webhook_retry(head.id, crate::clock::unix_ms() + 60_000)
        .await
        .unwrap();
    assert!(
        due(store).await.is_empty(),
        "the file's next waits behind its retry"
    );
    store.webhook_failed(head.id).await.unwrap();
    let next = due(store).await;
    assert_eq!(
        data(&next[0])["n"],
        2,
        "a failed message no longer holds the file"
    );
    assert_eq!(store.webhook_depth().await.unwrap(), (4, 1));

    let trimmed = store.trim_webhooks(2, 0).await.unwrap();
    assert_eq!((trimmed.dropped, trimmed.expired), (3, 0));
    let left = due(store).await;
    assert_eq!(data(&left[0])["n"], 4, "the oldest went");
    let trimmed = store
        .trim_webhooks(100, crate::clock::unix_ms() + 1)
        .await
        .unwrap();
    assert_eq!(trimmed.dropped, 0);
    assert_eq!(store.webhook_depth().await.unwrap().1, 0);
}

/// Over its bound, an endpoint loses people's comings and goings before rooms' events, and
/// those before file updates: a guest churning through a public link cannot push the
/// file's latest `file.updated` out of the outbox.
pub async fn webhook_trim_drops_people_first(store: &dyn Store) {
    let (file, _) = edited_file(store, endpoint("ep_t", EVENT_TYPES)).await;
    store
        .record_webhooks(&[person(&file, "room.opened", 0)])
        .await
        .unwrap();
    let churn: Vec<_> = (1..=6)
        .map(|n| {
            person(
                &file,
                if n % 2 == 1 {
                    "person.joined"
                } else {
                    "person.left"
                },
                n,
            )
        })
        .collect();
    store.record_webhooks(&churn).await.unwrap();
    assert_eq!(store.webhook_depth().await.unwrap(), (8, 0));

    let trimmed = store.trim_webhooks(3, 0).await.unwrap();
    assert_eq!(trimmed.dropped, 5);
    // What is left arrives in its order: the update, the room's opening, the last leave.
    let mut left = Vec::new();
    loop {
        let Some(head) = due(store)
            .await
            .into_iter()
            .find(|m| m.file == file.as_str())
        else {
            break;
        };
        left.push((head.kind.clone(), data(&head)));
        assert!(store.webhook_delivered(head.id, head.seq).await.unwrap());
    }
    let kinds: Vec<&str> = left.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        ["file.updated", "room.opened", "person.left"],
        "{left:?}"
    );
    assert_eq!(left[0].1["version"], 3);
    assert_eq!(left[2].1["n"], 6, "the newest of the people's events stays");
}

/// `version.created` is recorded in the version's own commit, with the id the store gave
/// it; a fenced save records nothing.
pub async fn version_created_rides_on_the_version(store: &dyn Store) {
    use crate::history::{self, new_info, HistoryRules, VersionKind};
    store
        .create_webhook(&endpoint("ep_versions", &["version.created"]), 10)
        .await
        .unwrap();
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let rules = HistoryRules::default();
    let mut info = new_info(7, 1_796_324_310_123, VersionKind::Named, vec!["Ada".into()]);
    info.title = Some("Milestone".into());
    let saved = history::save(
        store,
        &file,
        epoch,
        r#"{"a":{"x":1}}"#,
        info.clone(),
        &rules,
    )
    .await
    .unwrap();
    let made = due(store).await;
    assert_eq!(made.len(), 1);
    let d = data(&made[0]);
    assert_eq!(d["version_id"], saved.id);
    assert_eq!(d["version"], 7);
    assert_eq!(d["kind"], "named");
    assert_eq!(d["title"], "Milestone");
    assert_eq!(d["created_at"], "2026-12-03T18:58:30.123Z");
    assert!(store
        .webhook_delivered(made[0].id, made[0].seq)
        .await
        .unwrap());
    take(store, &file).await;
    assert!(
        history::save(store, &file, epoch, r#"{"a":{"x":2}}"#, info, &rules)
            .await
            .is_err()
    );
    assert!(due(store).await.is_empty());
}
