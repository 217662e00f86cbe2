//! Editor and people caps: editors over the cap wait as viewers, a full file refuses with 4031.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editors_over_the_cap_wait_as_viewers_and_are_promoted_in_order() {
    let (node, f) = node_with_file(&[("ATRIUM_ROOM_EDITORS", "2")]).await;
    let [(mut a, wa), (b, wb)] =
        Client::join_each(&node, &f.id, [f.by_owner(), f.by_edit_key()]).await;
    assert_eq!(wa["role"], "editor", "{wa}");
    assert_eq!(wb["role"], "editor", "{wb}");

    let [(mut c, wc), (mut d, wd), (mut v, wv)] = Client::join_each(
        &node,
        &f.id,
        [f.by_edit_key(), f.by_edit_key(), f.by_view_key()],
    )
    .await;
    for w in [&wc, &wd] {
        assert_eq!(w["role"], "viewer", "third and fourth editor: {w}");
        assert_eq!(w["reason"], "editors-full", "{w}");
    }
    assert_eq!(wv["role"], "viewer", "{wv}");
    assert_ne!(
        wv["reason"], "editors-full",
        "a view key never asked to edit: {wv}"
    );
    let (yc, yd) = (you(&wc), you(&wd));

    // Waiting editors' patches are refused with editors-full (and change nothing).
    c.send_patch(1, vec![put("c", json!({"by": "c"}))]).await;
    let r = c.await_reject(json!(1)).await;
    assert_eq!(r["code"], "editors-full", "{r}");
    d.send_patch(1, vec![put("d", json!({"by": "d"}))]).await;
    let r = d.await_reject(json!(1)).await;
    assert_eq!(r["code"], "editors-full", "{r}");

    // An editor leaves: the first one waiting (C) is promoted, and everyone hears.
    b.close().await;
    for (who, cl) in [("a", &mut a), ("c", &mut c), ("d", &mut d), ("v", &mut v)] {
        let m = cl.recv_json().await;
        assert_eq!(
            m,
            json!({"type": "role", "id": yc, "role": "editor"}),
            "{who} after an editor left"
        );
    }
    let v1 = c.patch_acked(2, vec![put("c", json!({"by": "c"}))]).await;
    assert_eq!(v1, 1, "the refused patches took no version");
    for (who, cl) in [("a", &mut a), ("d", &mut d), ("v", &mut v)] {
        let m = cl.recv_json().await;
        assert!(
            m["type"] == "patch" && m["v"] == 1 && m["by"] == json!(yc),
            "{who} gets the promoted editor's patch: {m}"
        );
    }
    d.send_patch(2, vec![put("d", json!({"by": "d"}))]).await;
    let r = d.await_reject(json!(2)).await;
    assert_eq!(r["code"], "editors-full", "D still waits: {r}");

    // C leaves in turn: D is next.
    c.close().await;
    for (who, cl) in [("a", &mut a), ("d", &mut d), ("v", &mut v)] {
        let m = cl.recv_json().await;
        assert_eq!(
            m,
            json!({"type": "role", "id": yd, "role": "editor"}),
            "{who} after the promoted editor left"
        );
    }
    assert_eq!(
        d.patch_acked(3, vec![put("d", json!({"by": "d"}))]).await,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_always_gets_an_editor_seat() {
    let (node, f) = node_with_file(&[("ATRIUM_ROOM_EDITORS", "2")]).await;
    let [(_b, wb), (_c, wc), (_d, wd)] = Client::join_each(
        &node,
        &f.id,
        [f.by_edit_key(), f.by_edit_key(), f.by_edit_key()],
    )
    .await;
    assert_eq!(wb["role"], "editor");
    assert_eq!(wc["role"], "editor");
    assert_eq!(wd["role"], "viewer", "the cap is full: {wd}");
    assert_eq!(wd["reason"], "editors-full", "{wd}");
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    assert_eq!(wa["role"], "editor", "the owner, cap full: {wa}");
    assert!(
        wa.get("reason").is_none_or(Value::is_null),
        "no reason for an editor: {wa}"
    );
    assert_eq!(a.patch_acked(1, vec![put("o", json!({}))]).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_file_refuses_the_next_person_with_4031() {
    let (node, f) = node_with_file(&[("ATRIUM_ROOM_PEOPLE", "3")]).await;
    let [(_a, _), (b, _), (_c, _)] = Client::join_each(&node, &f.id, f.everyone()).await;
    Client::join_refused_with(&node, &f.id, &f.by_edit_key(), &[], 4031).await;
    // Someone leaves: there is room again.
    let viewer = f.by_view_key();
    let (_d, wd) = Client::refused_until_freed(&node, &f.id, &viewer, 4031, b.close()).await;
    assert_eq!(wd["type"], "welcome");
}
