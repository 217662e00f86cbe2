//! Rooms open only for a hello that is let in; a socket waiting for a slot ends with its session.

use super::*;

/// Rooms in memory, from /health's statistics (the node runs with them public).
async fn rooms_open(node: &Node) -> u64 {
    let r = get(node, "/health", None).await;
    r.body()["stats"]["rooms"]
        .as_u64()
        .expect("stats in /health (ATRIUM_HEALTH_STATS=1)")
}

/// A hello with no credentials for a private file used to open its room (the
/// lease taken, the epoch raised, the whole document read and kept for the idle
/// time) before it was refused. Now the file and the access it gives are checked
/// first: a refused joiner costs one lookup and no room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_hello_never_opens_a_room() {
    let n = node(&[("ATRIUM_HEALTH_STATS", "1")]).await;
    let private = shared_file(&n, "none").await;
    let stranger = new_account(&n, "stranger").await;
    let viewable = shared_file(&n, "view").await;
    assert_eq!(rooms_open(&n).await, 0);

    let cases: Vec<(&str, Hello, u16)> = vec![
        (private.id.as_str(), Hello::anonymous(), 4001),
        (
            private.id.as_str(),
            Hello::key("made-up-key-0123456789abcdef"),
            4001,
        ),
        (private.id.as_str(), Hello::key(&private.view_key), 4003),
        (private.id.as_str(), Hello::key(&private.edit_key), 4003),
        (private.id.as_str(), Hello::token(&stranger), 4003),
        (viewable.id.as_str(), Hello::anonymous(), 4001),
        (viewable.id.as_str(), Hello::key(&private.view_key), 4001),
        ("no-such-file-here", Hello::key(&private.view_key), 4004),
    ];
    for (file, hello, code) in &cases {
        Client::join_expect_close(&n, file, hello, *code).await;
        assert_eq!(
            rooms_open(&n).await,
            0,
            "a hello refused with {code} opened a room for {file}"
        );
    }
    // The same file still opens for someone it lets in.
    let (_viewer, w) = Client::join(&n, &viewable.id, &Hello::key(&viewable.view_key)).await;
    assert_eq!(w["role"], "viewer");
    assert_eq!(rooms_open(&n).await, 1);
}

/// A socket over its account's cap waits briefly for a slot. It used to be
/// registered for sign-out only after that wait: a sign-out in the gap missed it,
/// and it was welcomed as an editor and its patch saved after its token had
/// stopped working everywhere else. Now it is registered before its token is
/// even checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_out_while_a_socket_waits_for_a_slot_closes_it() {
    let n = node(&[("ATRIUM_WS_PER_ACCOUNT", "1")]).await;
    let email = unique_email("waiter");
    let (first_token, _) = signup(&n, &email).await;
    let f = create_file(&n, &first_token, "Mine", None).await;
    let file = s(&f["id"]).to_string();
    let second_token = signin(&n, &email).await;

    // The account's one slot is taken by the first session's socket.
    let (holder, _) = Client::join(&n, &file, &Hello::token(&first_token)).await;
    // The second session's socket waits for it.
    let mut waiter = Client::connect(&n, &file).await;
    waiter
        .send_json(&Hello::token(&second_token).to_json())
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    send_empty(&n, "POST", "/api/signout", Some(&second_token))
        .await
        .assert_status(204);
    // The slot comes free while the waiter is still within its grace.
    holder.close().await;
    let started = Instant::now();
    match waiter.next_non_presence(WAIT).await {
        Event::Close(code) => assert_eq!(code, Some(4001), "closed with the wrong code"),
        other => panic!("a signed-out socket got {other:?} instead of a close 4001"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    // Its token is refused everywhere, and nothing was written in its name.
    get(&n, "/api/me", Some(&second_token))
        .await
        .assert_error(401, "unauthorized");
    let (version, _) = get_doc(&n, &first_token, &file).await;
    assert_eq!(version, 0);
}

/// A hello that arrives while its file's room is open is not checked before the room
/// (which checks each joiner itself). Such a hello used to open the room for itself if
/// the room closed while it waited for its account's slot: the lease taken, the epoch
/// raised and the whole document read for a stranger, who was refused only then. Now a
/// join that finds no room is checked before a room is opened for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_hello_whose_room_closed_while_it_waited_never_opens_it() {
    let n = node(&[
        ("ATRIUM_HEALTH_STATS", "1"),
        ("ATRIUM_WS_PER_ACCOUNT", "1"),
        ("ATRIUM_ROOM_IDLE_MS", "1000"),
    ])
    .await;
    let private = shared_file(&n, "none").await;
    let public = shared_file(&n, "view").await;
    let stranger = new_account(&n, "stranger").await;
    // The private file's owner is in it; the public file's owner stays in theirs, where
    // the stranger's one socket slot is held.
    let (owner, _) = Client::join(&n, &private.id, &Hello::token(&private.owner)).await;
    let (_public_owner, _) = Client::join(&n, &public.id, &Hello::token(&public.owner)).await;
    let mut holder_hello = Hello::token(&stranger);
    holder_hello.key = Some(public.view_key.clone());
    let (holder, _) = Client::join(&n, &public.id, &holder_hello).await;
    assert_eq!(rooms_open(&n).await, 2);

    // The stranger's second socket asks for the private file while its room is open,
    // and waits for the account's slot.
    let mut waiter = Client::connect(&n, &private.id).await;
    waiter.send_json(&Hello::token(&stranger).to_json()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The owner leaves; the private file's room goes once it has been idle.
    owner.close().await;
    let deadline = Instant::now() + Duration::from_secs(2);
    while rooms_open(&n).await != 1 {
        assert!(Instant::now() < deadline, "the idle room never closed");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The slot comes free while the waiter is within its grace.
    holder.close().await;
    match waiter.next_non_presence(WAIT).await {
        Event::Close(code) => assert_eq!(code, Some(4003), "closed with the wrong code"),
        other => panic!("a stranger got {other:?} instead of a close 4003"),
    }
    assert_eq!(
        rooms_open(&n).await,
        1,
        "a stranger's refused hello opened the private file's room"
    );
}
