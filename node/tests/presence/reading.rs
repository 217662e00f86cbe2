//! Reading presences: the entry rules, and waiting for what a receiver is told.

use super::*;

/// The entries of a `presences` message, checked against the message rules.
pub(super) fn people(msg: &Value) -> Vec<Value> {
    assert_eq!(msg["type"], "presences", "not a presences message: {msg}");
    let list = msg["people"]
        .as_array()
        .unwrap_or_else(|| panic!("presences without a people array: {msg}"));
    assert!(
        list.len() <= 60,
        "a presences message carries at most 60 people, this one has {}",
        list.len()
    );
    for e in list {
        assert_id(&e["id"]);
    }
    list.clone()
}

/// JSON equality with numbers compared by value (a cursor sent as `1` may
/// come back as `1.0`).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

pub(super) fn assert_same(got: &Value, want: Value) {
    assert!(same(got, &want), "got  {got}\nwant {want}");
}

pub(super) fn keys(entry: &Value) -> Vec<String> {
    let mut k: Vec<String> = entry
        .as_object()
        .unwrap_or_else(|| panic!("entry is not an object: {entry}"))
        .keys()
        .cloned()
        .collect();
    k.sort();
    k
}

pub(super) fn assert_full(entry: &Value) {
    assert_eq!(
        keys(entry),
        ["camera", "cursor", "id", "page", "sel", "t"],
        "a full entry has exactly id, page, cursor, sel, camera and t: {entry}"
    );
}

pub(super) fn assert_short(entry: &Value) {
    assert_eq!(
        keys(entry),
        ["id", "page"],
        "an entry for someone on another page is {{id, page}} only: {entry}"
    );
}

/// Every entry about `who` in a list of messages (presences only).
pub(super) fn about(msgs: &[Value], who: &str) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["type"] == "presences")
        .flat_map(people)
        .filter(|e| e["id"] == who)
        .collect()
}

pub(super) fn assert_never_self(msgs: &[Value], me: &str) {
    for m in msgs.iter().filter(|m| m["type"] == "presences") {
        for e in people(m) {
            assert_ne!(e["id"], me, "a receiver got its own state: {m}");
        }
    }
}

/// Reads until an entry about `who` satisfying `want` arrives, within `dur`.
/// Every presences message read is checked for the receiver's own id.
/// The entries of the next `presences` message before `deadline` (none of them
/// about `me`, the reader); `None` when none came.
pub(super) async fn next_entries(
    c: &mut Client,
    me: &str,
    deadline: Instant,
) -> Option<Vec<Value>> {
    let left = deadline.saturating_duration_since(Instant::now());
    let m = c.recv_type("presences", left).await?;
    assert_never_self(std::slice::from_ref(&m), me);
    Some(people(&m))
}

/// Reads presences until `others` have all been described on page `page`
/// within 2 s; each such entry is checked with `check`. The last entry per id.
pub(super) async fn caught_up_on(
    c: &mut Client,
    me: &str,
    page: &str,
    others: &[&str],
    check: impl Fn(&Value),
) -> HashMap<String, Value> {
    let mut state: HashMap<String, Value> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !others.iter().all(|o| state.contains_key(*o)) {
        let Some(entries) = next_entries(c, me, deadline).await else {
            panic!("{me} was not caught up on {page} within 2 s; it has {state:?}");
        };
        for e in entries.into_iter().filter(|e| e["page"] == page) {
            check(&e);
            state.insert(s(&e["id"]).to_string(), e);
        }
    }
    state
}

pub(super) async fn wait_entry(
    c: &mut Client,
    me: &str,
    who: &str,
    dur: Duration,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + dur;
    let mut seen = Vec::new();
    loop {
        let Some(entries) = next_entries(c, me, deadline).await else {
            panic!("no fitting entry about {who} within {dur:?}; entries about them: {seen:?}");
        };
        for e in entries {
            if e["id"] == who {
                if want(&e) {
                    return e;
                }
                seen.push(e);
            }
        }
    }
}

/// A node and a file with an edit link, its owner and an edit-key holder in
/// it: the file, then each one's socket and person id.
pub(super) async fn owner_and_editor() -> (Node, SharedFile, [(Client, String); 2]) {
    let (node, f) = node_with_file(&[]).await;
    let [(a, wa), (b, wb)] = Client::join_each(&node, &f.id, [f.by_owner(), f.by_edit_key()]).await;
    (node, f, [(a, you(&wa)), (b, you(&wb))])
}

/// Sends a presence every `every` for `dur` while reading everything that
/// comes; returns the `presences` messages received.
pub(super) async fn move_and_listen(
    mut c: Client,
    page: &'static str,
    every: Duration,
    dur: Duration,
) -> (Client, Vec<Value>) {
    let start = Instant::now();
    let end = start + dur;
    let mut next_send = start;
    let mut i = 0u64;
    let mut got = Vec::new();
    loop {
        let now = Instant::now();
        if now >= end {
            return (c, got);
        }
        if now >= next_send {
            i += 1;
            c.send_presence(json!({"page": page, "cursor": [i, i]}))
                .await;
            next_send += every;
        }
        let until = next_send.min(end);
        if let Some(m) = c
            .recv_any_timeout(until.saturating_duration_since(Instant::now()))
            .await
        {
            if m["type"] == "presences" {
                got.push(m);
            }
        }
    }
}
