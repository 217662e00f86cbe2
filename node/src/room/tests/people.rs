//! Joining, leaving, seats and promotion, replaced sockets, and the file's settings.

use super::*;
use atrium_protocol::CloseCode;

#[test]
fn the_welcome_comes_first_with_the_document_and_the_people() {
    let (mut h, _a) = owner_wrote(put("x", json!({"n": 1})));
    h.durable(1);
    let mut b = h.try_join(As::Editor, None).expect("join");
    h.commit();
    let got = b.frames();
    let welcome = &got[0];
    assert_eq!(welcome["type"], "welcome");
    assert_eq!(welcome["you"], b.joined.person.as_str());
    assert_eq!(welcome["role"], "editor");
    assert_eq!(welcome["version"], 1);
    assert_eq!(welcome["doc"]["x"]["n"], 1, "{welcome}");
    assert_eq!(welcome["people"].as_array().map(Vec::len), Some(2));
}

#[test]
fn what_the_room_sends_a_joiner_waits_behind_its_welcome() {
    let (mut h, _a) = owner_wrote(put("x", json!({})));
    let mut b = h.try_join(As::Editor, None).expect("join");
    // A broadcast while b's welcome waits for version 1 to be durable.
    let _c = h.try_join(As::Viewer, None).expect("join");
    assert!(b.frames().is_empty(), "nothing before the welcome");
    h.durable(1);
    let types: Vec<Value> = b.frames().iter().map(|m| m["type"].clone()).collect();
    assert_eq!(types.first(), Some(&json!("welcome")), "{types:?}");
    assert!(types.contains(&json!("join")), "{types:?}");
}

/// A room whose document holds `bytes` of text, durable, on a node where an address's
/// share of document bytes is 1,000 bytes, then 1,000 a second. Its owner joined while it
/// was empty.
fn document_of(bytes: usize) -> Harness {
    let share = [
        ("document-bytes-per-ip-per-second", "1000"),
        ("document-burst-bytes-per-ip", "1000"),
    ];
    let mut h = Harness::with(&share, u64::MAX / 4);
    let owner = h.join(As::Owner);
    h.patch(&owner, 1, put("text", json!({"s": "x".repeat(bytes)})));
    h.end_turn();
    h.durable(1);
    h
}

#[test]
fn welcomes_with_a_large_document_wait_out_their_address_share() {
    let mut h = document_of(100_000);
    let _first = h
        .try_join(As::Viewer, None)
        .expect("one document goes while nothing is owed");
    match h.try_join(As::Viewer, None) {
        Err(JoinError::Paced(wait)) => assert!(wait > Duration::from_secs(90), "{wait:?}"),
        other => panic!(
            "a second 100 KB welcome within the share's second: {:?}",
            other.map(|p| p.joined)
        ),
    }
    // Resuming sends no document: never refused for the share.
    h.try_join(As::Viewer, Some(1)).expect("a resume");
}

#[test]
fn welcomes_with_a_small_document_are_never_refused_for_the_share() {
    let mut h = document_of(10_000);
    for _ in 0..5 {
        h.try_join(As::Viewer, None).expect("a 10 KB welcome");
    }
}

#[test]
fn everyone_else_hears_a_join() {
    let mut h = Harness::new();
    let mut a = h.join(As::Owner);
    a.frames();
    let b = h.join(As::Viewer);
    let joins = a.of_type("join");
    assert_eq!(joins.len(), 1);
    assert_eq!(joins[0]["people"][0]["id"], b.joined.person.as_str());
    assert_eq!(joins[0]["people"][0]["role"], "viewer");
}

#[test]
fn a_newer_socket_of_the_same_client_replaces_the_older_quietly() {
    let mut h = Harness::new();
    let mut a = h.join(As::Owner);
    let first = h.try_join(As::Editor, None).expect("join");
    h.commit();
    a.frames();
    let second = h
        .try_join_as(As::Editor, first.client, None)
        .expect("join again");
    assert_eq!(first.closed(), Some(CloseCode::Replaced.code()));
    assert_eq!(second.joined.person, first.joined.person, "the same person");
    h.commit();
    assert!(
        a.of_type("join").is_empty(),
        "nobody saw the person leave or come"
    );
    assert_eq!(h.core.participants.len(), 2);
}

#[test]
fn a_full_room_refuses_the_next_person() {
    let mut h = Harness::with(&[("room-people", "2")], u64::MAX / 4);
    let first = h.join(As::Owner);
    h.join(As::Viewer);
    assert_eq!(h.try_join(As::Viewer, None).err(), Some(JoinError::Full));
    // A replacing socket of someone already inside still gets in.
    assert!(h.try_join_as(As::Owner, first.client, None).is_ok());
}

#[test]
fn editors_past_the_cap_join_as_viewers_waiting_for_a_seat() {
    let mut h = Harness::with(&[("room-editors", "1")], u64::MAX / 4);
    let first = h.join(As::Editor);
    assert_eq!(first.joined.role, super::super::access::Role::Editor);
    let mut second = h.try_join(As::Editor, None).expect("join");
    h.commit();
    let welcome = &second.frames()[0];
    assert_eq!(welcome["role"], "viewer");
    assert_eq!(welcome["reason"], "editors-full");
    h.patch(&second, 1, put("x", json!({})));
    assert_eq!(second.of_type("reject")[0]["code"], "editors-full");
    assert!(
        second.seat.refusal().is_some(),
        "the socket's reader refuses too"
    );
}

#[test]
fn the_owner_gets_a_seat_past_the_cap() {
    let mut h = Harness::with(&[("room-editors", "1")], u64::MAX / 4);
    h.join(As::Editor);
    let owner = h.join(As::Owner);
    assert_eq!(owner.joined.role, super::super::access::Role::Editor);
}

#[test]
fn a_freed_seat_goes_to_the_first_waiting_in_arrival_order() {
    let mut h = Harness::with(&[("room-editors", "1")], u64::MAX / 4);
    let first = h.join(As::Editor);
    let mut second = h.join(As::Editor);
    let mut third = h.join(As::Editor);
    second.frames();
    third.frames();
    h.leave(&first);
    let roles = third.of_type("role");
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0]["id"], second.joined.person.as_str());
    assert_eq!(roles[0]["role"], "editor");
    assert!(second.seat.refusal().is_none());
    assert!(third.seat.refusal().is_some());
    h.patch(&second, 1, put("x", json!({})));
    assert_eq!(h.version(), 1);
}

#[test]
fn a_view_link_key_joins_as_viewer() {
    let mut h = Harness::new();
    let v = h.join(As::Viewer);
    assert_eq!(v.joined.role, super::super::access::Role::Viewer);
    assert!(v.seat.refusal().is_some());
}

#[test]
fn turning_the_link_off_closes_key_holders_and_keeps_the_owner() {
    let (mut h, owner, guest) = owner_and(As::Editor);
    let mut record = h.core.record.clone();
    record.link = LinkAccess::None;
    h.send(RoomCmd::FileChanged(record));
    assert_eq!(guest.closed(), Some(CloseCode::Forbidden.code()));
    assert_eq!(owner.closed(), None);
    assert_eq!(h.core.participants.len(), 1);
    assert_eq!(
        h.try_join(As::Editor, None).err(),
        Some(JoinError::Denied(super::super::access::Denied::Forbidden))
    );
}

#[test]
fn a_view_only_link_demotes_key_editors_and_says_so() {
    let (mut h, mut owner, mut guest) = owner_and(As::Editor);
    owner.frames();
    let mut record = h.core.record.clone();
    record.link = LinkAccess::View;
    h.send(RoomCmd::FileChanged(record));
    let roles = owner.of_type("role");
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0]["role"], "viewer");
    h.patch(&guest, 1, put("x", json!({})));
    assert_eq!(guest.of_type("reject")[0]["code"], "viewer");
}

#[test]
fn a_rotated_key_closes_those_who_joined_with_the_old_one() {
    let mut h = Harness::new();
    let guest = h.join(As::Viewer);
    let mut record = h.core.record.clone();
    record.key_generation += 1;
    h.send(RoomCmd::FileChanged(record));
    assert_eq!(guest.closed(), Some(CloseCode::Forbidden.code()));
}

#[test]
fn a_resume_brings_the_missed_patches_instead_of_the_document() {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    for id in 1..=3 {
        h.patch(&a, id, put(&format!("s{id}"), json!({})));
    }
    h.commit();
    let mut b = h.try_join(As::Editor, Some(1)).expect("join");
    h.commit();
    let welcome = &b.frames()[0];
    assert!(welcome.get("doc").is_none(), "{welcome}");
    let resume = welcome["resume"].as_array().expect("resume");
    assert_eq!(versions(resume), vec![2, 3]);
}

#[test]
fn a_finishing_room_turns_joiners_away() {
    let mut h = Harness::new();
    h.send(RoomCmd::Move);
    assert_eq!(
        h.try_join(As::Viewer, None).err(),
        Some(JoinError::Unavailable(CloseCode::Moved))
    );
    let mut h = Harness::new();
    let (tx, _rx) = oneshot::channel();
    h.send(RoomCmd::Shutdown(tx));
    assert_eq!(
        h.try_join(As::Viewer, None).err(),
        Some(JoinError::Unavailable(CloseCode::ServiceRestart))
    );
}

#[test]
fn a_busy_room_lowers_its_presence_rate_and_tells_everyone() {
    let mut h = Harness::with(
        &[
            ("busy-room", "2"),
            ("presence-hz", "20"),
            ("busy-presence-hz", "5"),
        ],
        u64::MAX / 4,
    );
    let mut a = h.join(As::Owner);
    h.join(As::Viewer);
    a.frames();
    let c = h.join(As::Viewer);
    assert_eq!(
        a.of_type("presence-rate"),
        vec![json!({"type": "presence-rate", "hz": 5})]
    );
    assert_eq!(h.core.tick_period(), Duration::from_millis(200));
    h.leave(&c);
    assert_eq!(
        a.of_type("presence-rate"),
        vec![json!({"type": "presence-rate", "hz": 20})]
    );
}

#[test]
fn the_shared_people_count_follows_joins_and_leaves() {
    let (mut h, a, b) = owner_and(As::Viewer);
    let count = || h.core.people.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(count(), 2);
    h.leave(&a);
    h.leave(&b);
    assert_eq!(h.core.people.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[test]
fn an_app_grant_seats_the_person_and_a_refresh_narrows_or_ends_it() {
    use crate::apptoken::Level;
    let mut h = Harness::new();
    let mut a = h.join(As::Owner);
    a.frames();
    let mut b = h.join(As::App(Level::Edit));
    let joins = a.of_type("join");
    let them = &joins[0]["people"][0];
    assert_eq!(them["role"], "editor");
    assert_eq!(them["sub"], "ann");
    assert_eq!(them["color"], "#ff0066");
    assert_eq!(them["account"], "sub-ann");
    b.frames();
    // Narrowed: a viewer at once, told with `refreshed` and a `role`.
    h.send(RoomCmd::Regrant {
        conn: b.conn,
        grant: Some(Level::View),
        exp: 2_000_000_000,
    });
    let got = b.frames();
    assert!(
        got.iter()
            .any(|m| m["type"] == "refreshed" && m["exp"] == 2_000_000_000),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|m| m["type"] == "role" && m["role"] == "viewer"),
        "{got:?}"
    );
    assert_eq!(b.seat.refusal().map(|r| r.0), Some("viewer"));
    // Removed: 4003.
    h.send(RoomCmd::Regrant {
        conn: b.conn,
        grant: None,
        exp: 2_000_000_000,
    });
    assert_eq!(b.closed(), Some(CloseCode::Forbidden.code()));
    assert!(a.of_type("leave").len() <= 1);
}

/// A new client id, numbered.
fn nth_client(n: u32, tag: u8) -> ClientKey {
    let mut id = [tag; 16];
    id[..4].copy_from_slice(&n.to_le_bytes());
    ClientKey(id)
}

/// Guests saying hello with a new client id each time (viewers, and editors with a patch
/// each) are forgotten once many have gone and their patches are durable, so the ids a room
/// remembers stay bounded; a writer who comes back is answered from what the store keeps:
/// its resend is acked and never applied twice; and whoever comes back is the same person.
#[test]
fn clients_gone_are_forgotten_once_many_and_their_patches_durable() {
    let mut h = Harness::new();
    let owner = h.join(As::Owner);
    h.patch(&owner, 1, put("a", json!({"n": 1})));
    h.commit();
    h.leave(&owner);
    let mut first_viewer = None;
    for n in 0..3 * super::super::core::FORGET_CLIENTS_FROM as u32 {
        let client = nth_client(n, 7);
        if n % 2 == 0 {
            let p = h.try_join_as(As::Viewer, client, None).expect("join");
            first_viewer.get_or_insert(p.joined.person.clone());
            h.leave(&p);
        } else {
            let p = h.try_join_as(As::Editor, client, None).expect("join");
            h.patch(&p, 1, put("g", json!({ "n": n })));
            h.commit();
            h.leave(&p);
        }
    }
    let remembered = h.core.clients.len();
    assert!(
        remembered <= super::super::core::FORGET_CLIENTS_FROM,
        "{remembered} client ids remembered"
    );
    assert!(!h.core.clients.contains_key(&owner.client));
    // The owner comes back: the store's op id answers for the forgotten client, and it is
    // the same person to the others (`you` is stable while the room lives).
    let version = h.version();
    let mut back = h
        .try_join_as(As::Owner, owner.client, Some(version))
        .expect("join");
    assert_eq!(back.joined.person, owner.joined.person);
    assert!(!h.core.clients.contains_key(&nth_client(0, 7)));
    let viewer_again = h
        .try_join_as(As::Viewer, nth_client(0, 7), None)
        .expect("join");
    assert_eq!(Some(viewer_again.joined.person), first_viewer);
    h.commit();
    back.frames();
    h.patch(&back, 1, put("a", json!({"n": 2})));
    h.end_turn();
    h.commit();
    assert_eq!(back.of_type("ack").len(), 1, "the resend is acked");
    assert_eq!(h.version(), version, "and not applied again");
}

/// A writer whose patch is not durable yet is never forgotten (the store could not answer
/// for it); once it is, a hello whose op id was read before the forgetting reads it again
/// rather than trusting a read that may have missed the patch.
#[test]
fn a_writer_is_kept_until_durable_and_a_read_older_than_the_forgetting_is_redone() {
    let mut h = Harness::new();
    let editor = h.join(As::Editor);
    h.patch(&editor, 1, put("a", json!({"n": 1})));
    h.end_turn();
    h.leave(&editor);
    let viewers = |h: &mut Harness, tag: u8| {
        for n in 0..super::super::core::FORGET_CLIENTS_FROM as u32 + 1 {
            let p = h
                .try_join_as(As::Viewer, nth_client(n, tag), None)
                .expect("join");
            h.leave(&p);
        }
    };
    h.advance(Duration::from_millis(1));
    viewers(&mut h, 7);
    assert_eq!(
        h.core.forgot_clients_at,
        Some(h.now),
        "the viewers were forgotten"
    );
    assert!(
        h.core.clients.contains_key(&editor.client),
        "a writer whose patch is not durable is kept"
    );
    h.durable(1);
    // A hello reads its op id now; the room forgets the durable writer before it arrives.
    let read_before = h.now;
    h.advance(Duration::from_millis(1));
    viewers(&mut h, 8);
    assert!(!h.core.clients.contains_key(&editor.client));
    h.read_at = Some(read_before);
    let stale = h.try_join_as(As::Editor, editor.client, Some(1));
    assert_eq!(stale.err(), Some(JoinError::Reread));
    // Read again: the store has the op, so its resend is acked, not applied.
    let mut back = h
        .try_join_as(As::Editor, editor.client, Some(1))
        .expect("join");
    back.frames();
    h.patch(&back, 1, put("a", json!({"n": 2})));
    h.end_turn();
    h.commit();
    assert_eq!(back.of_type("ack").len(), 1, "the resend is acked");
    assert_eq!(h.version(), 1, "and not applied again");
}

/// A welcome is charged to its address for the list of people it carries, not only for its
/// document or resume: resuming at the current version in a loop in a crowded room was
/// charged nothing, and sent the whole list each time.
#[test]
fn a_welcome_is_charged_for_its_people_too() {
    let settings = [
        ("document-bytes-per-ip-per-second", "1000"),
        ("document-burst-bytes-per-ip", "1000"),
        ("room-people", "2000"),
    ];
    let mut h = Harness::with(&settings, u64::MAX / 4);
    let mut crowd = Vec::new();
    for n in 0..1200u32 {
        let mut id = [9u8; 16];
        id[..4].copy_from_slice(&n.to_le_bytes());
        let from = [10, 0, (n >> 8) as u8, n as u8];
        let p = h.try_join_from(As::Viewer, ClientKey(id), None, from);
        crowd.push(p.expect("each from an address that owes nothing"));
    }
    h.commit();
    let me = ClientKey([200; 16]);
    let at = Some(h.version());
    let first = h.try_join_from(As::Viewer, me, at, [192, 0, 2, 77]);
    let first = first.expect("one welcome goes while nothing is owed");
    h.commit();
    drop(first);
    match h.try_join_from(As::Viewer, me, at, [192, 0, 2, 77]) {
        Err(JoinError::Paced(wait)) => assert!(wait > Duration::from_secs(30), "{wait:?}"),
        other => panic!(
            "a second welcome of 1,200 people within the share's second: {:?}",
            other.map(|p| p.conn)
        ),
    }
}

/// A welcome of a few hundred KB for a room already open is promised from the memory
/// budget too: at the mark it is refused with 1013 rather than built (a new copy of the
/// document, when no welcome of the last 5 s made one to share).
#[test]
fn a_welcome_over_64_kib_is_refused_at_the_memory_mark() {
    let mut h = Harness::with(&[], 1u64 << 30);
    let owner = h.join(As::Owner);
    h.patch(&owner, 1, put("text", json!({"s": "x".repeat(200_000)})));
    h.end_turn();
    h.durable(1);
    let memory = h.core.rules.memory.clone();
    let left = memory.room_left();
    let promised = memory.reserve(left - 300_000).expect("under the mark");
    match h.try_join(As::Viewer, None) {
        Err(JoinError::Unavailable(code)) => assert_eq!(code, CloseCode::TryAgainLater),
        other => panic!(
            "a 200 KB welcome with 300 KB left: {:?}",
            other.map(|p| p.conn)
        ),
    }
    drop(promised);
    h.try_join(As::Viewer, None)
        .expect("with room again, it is welcomed");
}

/// One socket sending events as fast as it may takes at most a quarter of the room's bytes
/// of events: another person's event in the same second is still relayed.
#[test]
fn one_sender_cannot_take_the_rooms_whole_budget_of_events() {
    let mut h = Harness::new();
    let flooder = h.join_from(As::Viewer, [203, 0, 113, 7]);
    // More sockets of the flooder's address share its quarter (the twelfth review: each
    // socket had a quarter of its own, so four took the room's whole budget).
    let more: Vec<Person> = (0..3)
        .map(|_| h.join_from(As::Viewer, [203, 0, 113, 7]))
        .collect();
    let honest = h.join_from(As::Viewer, [198, 51, 100, 1]);
    let mut watcher = h.join(As::Viewer);
    watcher.frames();
    let data = format!("\"{}\"", "e".repeat(4000));
    let event = |p: &Person| {
        RoomCmd::Event(crate::room::server::Event::Socket {
            conn: p.conn,
            data: data.clone(),
        })
    };
    // Twenty events of 4 KB in one moment: more than the room's 64 KiB a second.
    for _ in 0..20 {
        h.send(event(&flooder));
    }
    for p in &more {
        for _ in 0..5 {
            h.send(event(p));
        }
    }
    let from_flooder = watcher.of_type("event").len();
    assert!(
        (1..=5).contains(&from_flooder),
        "{from_flooder} events of 4 KB from one address's four sockets, with a quarter of 64 KiB"
    );
    h.send(event(&honest));
    assert_eq!(
        watcher.of_type("event").len(),
        1,
        "the other sender's event is relayed"
    );
}

/// A room just opened knows none of its file's clients: a hello whose op id was read from the
/// store before the file was taken may miss a patch the file's last room made durable just
/// before it let the file go (a drain, a move to another node), so it reads again.
#[test]
fn an_op_id_read_before_the_room_opened_is_read_again() {
    let mut h = Harness::new();
    let before = h
        .now
        .checked_sub(Duration::from_millis(1))
        .expect("an earlier instant");
    h.read_at = Some(before);
    let stale = h.try_join_as(As::Editor, ClientKey([9; 16]), None);
    assert_eq!(stale.err(), Some(JoinError::Reread));
    assert!(
        h.core.clients.is_empty(),
        "nothing kept of a join read again"
    );
    h.try_join_as(As::Editor, ClientKey([9; 16]), None)
        .expect("a read after the room opened is trusted");
}

/// A joiner refused a copy of a large document by the node's allowance for large messages
/// promises nothing from the memory budget: before, twice the document was promised before
/// the allowance was asked, and held until the next sample, so a flood of such hellos had
/// honest people refused for memory the node never used (the twenty-third review).
#[test]
fn a_joiner_refused_by_the_allowance_promises_no_memory() {
    let mut h = Harness::with(&[("send-queue-bytes", "65536")], 1u64 << 30);
    let owner = h.join(As::Owner);
    h.patch(&owner, 1, put("text", json!({"s": "x".repeat(200_000)})));
    h.end_turn();
    h.durable(1);
    let (other, _rx) = crate::outbox::outbox(10, 10, crate::metrics::Metrics::new());
    let budget = h.core.rules.welcome_budget.clone();
    let elsewhere = crate::store::Holder::File(crate::ids::FileId::parse("elsewhere").unwrap());
    let full = budget
        .charge(
            crate::outbox::CopyFor {
                address: other.address(),
                by_link: true,
            },
            (64 << 20) - 100_000,
            &elsewhere,
        )
        .expect("room for it");
    let memory = h.core.rules.memory.clone();
    let left = memory.room_left();
    match h.try_join(As::Viewer, None) {
        Err(JoinError::Unavailable(code)) => assert_eq!(code, CloseCode::TryAgainLater),
        other => panic!(
            "a 200 KB copy with 100 KB left: {:?}",
            other.map(|p| p.conn)
        ),
    }
    assert_eq!(
        memory.room_left(),
        left,
        "memory was promised for a refused joiner"
    );
    drop(full);
    h.try_join(As::Viewer, None)
        .expect("with room again, it is welcomed");
    assert!(
        memory.room_left() <= left - 400_000,
        "the copy made is promised until the next sample"
    );
}

/// A joiner who leaves while its welcome waits for its version to be durable takes the
/// welcome with it: the copy of the document it carries, charged on the allowance for large
/// messages before any socket holds it (so none can be made to make way for it), goes at
/// once, not when the store catches up (the twenty-fourth review: a stalled store kept such
/// copies charged though the room had closed their sockets 1013).
#[test]
fn a_welcome_waiting_for_durability_goes_with_its_joiner() {
    let mut h = Harness::with(&[("send-queue-bytes", "65536")], 1u64 << 30);
    let owner = h.join(As::Owner);
    h.patch(&owner, 1, put("text", json!({"s": "x".repeat(200_000)})));
    h.end_turn();
    let budget = h.core.rules.welcome_budget.clone();
    let all = budget.left();
    let viewer = h.try_join(As::Viewer, None).expect("a join");
    assert!(budget.left() < all, "the welcome's copy is charged");
    h.leave(&viewer);
    assert_eq!(budget.left(), all, "the copy went with its joiner");
    h.durable(1);
    assert_eq!(budget.left(), all);
    // A later joiner is welcomed (`join` asserts it).
    h.join(As::Viewer);
}

/// A socket replaced by a newer one of its client while its welcome waits for durability
/// leaves no welcome behind: only the newer socket's waits (the twenty-seventh review: the
/// replaced one's was kept, with what it holds, until the store caught up).
#[test]
fn a_replaced_sockets_waiting_welcome_goes_with_it() {
    let mut h = Harness::with(&[("send-queue-bytes", "65536")], 1u64 << 30);
    let owner = h.join(As::Owner);
    h.patch(&owner, 1, put("text", json!({"s": "x".repeat(200_000)})));
    h.end_turn();
    let client = crate::ids::ClientKey([200; 16]);
    let first = h.try_join_as(As::Viewer, client, None).expect("a join");
    let second = h.try_join_as(As::Viewer, client, None).expect("a join");
    let waiting: Vec<_> = h
        .core
        .pending
        .iter()
        .filter_map(|p| match p {
            crate::room::pending::Pending::Welcome { to, .. } => Some(*to),
            _ => None,
        })
        .collect();
    assert_eq!(waiting, vec![second.conn], "the first was {:?}", first.conn);
}
