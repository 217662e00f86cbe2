//! Sockets that ask for a large file and never read its welcome (the third review: 14
//! view-key sockets with small receive buffers held 10.8 MB welcomes, pinging to stay
//! alive, and every join to any large file on the node was closed 1013 while they held).

use std::collections::VecDeque;

use super::*;

/// A file of the room's owner of about 7.8 MB, its link set to `view`: its id and view key.
async fn large_file(r: &Room) -> (String, String) {
    large_file_of(&r.node, &r.owner).await
}

/// A file of about 7.8 MB of the account of `token`, its link set to `view`.
async fn large_file_of(node: &Node, token: &str) -> (String, String) {
    let file = create_file(node, token, "Large", Some(huge::large_document())).await;
    let id = s(&file["id"]).to_string();
    set_link(node, token, &id, "view").await;
    (id, s(&file["view_key"]).to_string())
}

/// A file of about 7.8 MB of a new account (an attacker's own), its link set to `view`.
async fn attackers_large_file(r: &Room) -> (String, String) {
    large_file_of(&r.node, &new_account(&r.node, "attacker").await).await
}

/// The owner joins as a client does, coming back after each 1013 (try again later), and
/// must be in within 20 s of `started`: the welcome, and how many tries were refused.
async fn owner_joins_within_20_s(r: &Room, id: &str, started: Instant) -> (Client, Value, u32) {
    let mut refusals = 0;
    loop {
        match Client::try_join(&r.node, id, &Hello::token(&r.owner)).await {
            Ok((client, welcome)) => return (client, welcome, refusals),
            Err(refused) => {
                refusals += 1;
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "the owner was kept out ({refused:?}, {refusals} tries; RSS {} MiB)",
                    rss_kib(r.node.pid()) / 1024
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// The owner, welcomed, has the whole large file and edits it.
async fn owner_has_the_file_and_edits(owner: &mut Client, welcome: &Value) {
    assert!(welcome["doc"]
        .as_object()
        .is_some_and(|d| d.len() == 60_000));
    owner
        .patch_acked(1, vec![json!({"op": "put", "id": "a", "props": {"x": 1}})])
        .await;
}

/// Ten view-key sockets of one address say hello to a large file and never read: they hold
/// only their address's share of the node's budget for large messages (counted until each
/// message is written, not just taken), so the node's memory stays clear of its mark and
/// the owner, at another address, still opens the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_welcomes_of_one_address_keep_nobody_else_out() {
    let _serial = SERIAL.lock().await;
    let r = room(&[
        ("ATRIUM_WELCOME_BUDGET_BYTES", "67108864"),
        ("ATRIUM_MEMORY_BUDGET", "160M"),
    ])
    .await;
    let (id, view_key) = large_file(&r).await;
    let mut held = Vec::new();
    for _ in 0..10 {
        let upgraded =
            Raw::try_connect_from([127, 0, 0, 2], r.node.port, &id, "", Some(4096)).await;
        let mut raw = upgraded.expect("an upgrade");
        // Each its own client (a client's second socket replaces its first).
        raw.text(&Hello::key(&view_key).to_json().to_string()).await;
        held.push(raw);
        // One after another, as a patient attacker joins (a welcome's reservation is held
        // until the node's memory samples include it).
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    // The owner tries as a client does, coming back after a 1013 (try again later).
    let started = Instant::now();
    let rss_before = rss_kib(r.node.pid()) / 1024;
    let (mut owner, welcome, refusals) = owner_joins_within_20_s(&r, &id, started).await;
    figure(json!({
        "case": "10 sockets of one address never read a 7.8 MB welcome (large-message budget 64 MiB, memory budget 160 MiB)",
        "owner_welcomed_in_ms": started.elapsed().as_millis(),
        "owner_refused_first": refusals,
        "rss_mib": rss_before,
    }));
    owner_has_the_file_and_edits(&mut owner, &welcome).await;
    drop(held);
}

/// A socket that keeps pinging but never reads its large welcome is given up once it has
/// taken nothing for `ATRIUM_PING_TIMEOUT_MS`, as a silent one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_takes_nothing_is_given_up() {
    let _serial = SERIAL.lock().await;
    let r = room(&[
        ("ATRIUM_PING_TIMEOUT_MS", "2000"),
        ("ATRIUM_PING_MS", "500"),
    ])
    .await;
    let (id, view_key) = large_file(&r).await;
    let mut raw = Raw::try_connect(r.node.port, &id, "", Some(4096))
        .await
        .expect("an upgrade");
    raw.text(&Hello::key(&view_key).to_json().to_string()).await;
    // Alive by its pings for four seconds, reading nothing.
    for _ in 0..16 {
        raw.send(&client_frame(PING, b"")).await;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let ended = loop {
        match tokio::time::timeout(Duration::from_secs(5), raw.stream.read(&mut buf)).await {
            Ok(Ok(0)) => break "closed",
            Ok(Ok(n)) => got += n,
            Ok(Err(_)) => break "reset",
            Err(_) => break "still open",
        }
    };
    figure(
        json!({"case": "a socket pings but never reads a 7.8 MB welcome (ping timeout 2 s)",
                  "bytes_it_got_after_4_s": got, "connection": ended}),
    );
    assert_ne!(
        ended, "still open",
        "the node kept the socket ({got} bytes read)"
    );
    assert!(got < 7_000_000, "the whole welcome arrived ({got} bytes)");
}

/// Bytes waiting in the kernel's send queues of the node's connections to `peer` (from
/// `/proc/net/tcp`: `tx_queue` of each socket whose local port is the node's).
fn queued_to(port: u16, peer: [u8; 4]) -> u64 {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let local = format!(":{port:04X}");
    let remote = format!(
        "{:02X}{:02X}{:02X}{:02X}:",
        peer[3], peer[2], peer[1], peer[0]
    );
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let ours = fields.get(1)?.ends_with(&local) && fields.get(2)?.starts_with(&remote);
            let tx = fields.get(4)?.split(':').next()?;
            ours.then(|| u64::from_str_radix(tx, 16).ok()).flatten()
        })
        .sum()
}

/// A hundred sockets of one address say hello to a 1.5 MB file (under half a send queue,
/// so not drawn on the large-message allowance) and never read: with the default bound on
/// what the kernel holds unsent of each connection (`ATRIUM_KERNEL_UNSENT_BYTES`), what it
/// holds for them is about that bound a socket, not grown to 4 MiB a socket (the fifth
/// review: 281 MiB of the machine's TCP memory for one address, outside the node's memory
/// budget). The rest of each welcome waits in the node, where its memory budget sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_that_never_read_hold_little_of_the_kernels_memory() {
    let _serial = SERIAL.lock().await;
    let r = room(&[]).await;
    let doc: serde_json::Map<String, Value> = (0..12_000)
        .map(|k| (format!("n{k}"), json!({"name": "x".repeat(100), "x": k})))
        .collect();
    let file = create_file(&r.node, &r.owner, "Mid", Some(Value::Object(doc))).await;
    let id = s(&file["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "view").await;
    let key = s(&file["view_key"]).to_string();
    let peer = [127, 0, 0, 41];
    let mut held = Vec::new();
    for _ in 0..100 {
        let upgraded = Raw::try_connect_from(peer, r.node.port, &id, "", Some(4096)).await;
        let mut raw = upgraded.expect("an upgrade");
        raw.text(&Hello::key(&key).to_json().to_string()).await;
        held.push(raw);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let queued = queued_to(r.node.port, peer);
    figure(json!({
        "case": "100 sockets of one address never read a 1.5 MB welcome",
        "kernel_send_queues_mib": queued / (1 << 20),
        "node_rss_mib": rss_kib(r.node.pid()) / 1024,
    }));
    assert!(queued > 0, "nothing was queued: the case measured nothing");
    // 128 KiB unsent, what the client's 4 KiB window took, and one write's last segment:
    // at most 256 KiB a socket.
    assert!(
        queued <= 100 * 256 * 1024,
        "the kernel holds {queued} bytes for 100 sockets that never read"
    );
    drop(held);
}

/// One socket from each of four addresses says hello to a large file of its own and never
/// reads, together holding the node's whole budget for large messages (the seventh review:
/// four such sockets, replaced before their ping timeout, kept every welcome over 2 MiB
/// refused 1013 for as long as they liked; files of their own, of accounts of their own,
/// since welcomes of one file share its document and one owner's copies are held to a
/// quarter of the budget). When a welcome does not fit, holders whose peers have taken nothing
/// for 5 s are closed 4008: the owner, coming back after the 1013, is welcomed within
/// seconds, not after the ping timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_welcomes_of_many_addresses_make_way() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_WELCOME_BUDGET_BYTES", "33554432")]).await;
    let (id, _) = large_file(&r).await;
    let mut held = Vec::new();
    for n in 0..4u8 {
        let (id, view_key) = attackers_large_file(&r).await;
        let upgraded =
            Raw::try_connect_from([127, 0, 0, 30 + n], r.node.port, &id, "", Some(4096)).await;
        let mut raw = upgraded.expect("an upgrade");
        raw.text(&Hello::key(&view_key).to_json().to_string()).await;
        held.push(raw);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let started = Instant::now();
    let (owner, welcome, refusals) = owner_joins_within_20_s(&r, &id, started).await;
    assert_eq!(welcome["type"], "welcome");
    assert!(
        refusals > 0,
        "the holders never filled the budget: the case shows nothing"
    );
    let mut made_way = 0;
    for raw in &mut held {
        // Closed mid-welcome: the welcome's first bytes, then the end of the connection.
        if let Got::Close(_) | Got::Eof = raw.next(Duration::from_secs(5)).await {
            made_way += 1;
        }
    }
    figure(json!({
        "case": "one socket from each of 4 addresses never reads a 7.8 MB welcome of a file of its own (large-message budget 32 MiB)",
        "owner_welcomed_in_ms": started.elapsed().as_millis(), "owner_refusals": refusals,
        "holders_closed_4008": made_way,
    }));
    owner.close().await;
}

/// The first frame the node began to send `raw`, looked at without reading it: its first
/// two bytes (a large welcome is a text frame with a 64-bit length: `[0x81, 0x7f]`), or
/// `None` while they have not come (an empty pair once the connection ended).
async fn first_frame(raw: &Raw) -> Option<[u8; 2]> {
    if raw.buf.len() >= 2 {
        return Some([raw.buf[0], raw.buf[1]]);
    }
    let mut head = [0u8; 2];
    match tokio::time::timeout(Duration::from_millis(1), raw.stream.peek(&mut head)).await {
        Ok(Ok(2)) => Some(head),
        Ok(Ok(0)) | Ok(Err(_)) => Some([0, 0]),
        _ => None,
    }
}

/// Of sockets that said hello to a large file: how many were sent the start of a large
/// welcome, and how many something else (a close) or nothing within 10 s.
async fn welcomes_begun(asking: &[Raw]) -> (u32, u32) {
    let (mut begun, mut refused) = (0, 0);
    for raw in asking {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match first_frame(raw).await {
                Some([TEXT, 0x7f]) => begun += 1,
                Some(_) => refused += 1,
                None if Instant::now() < deadline => continue,
                None => refused += 1,
            }
            break;
        }
    }
    (begun, refused)
}

/// Sockets of four addresses say hello to a large file (each address its own, of an
/// account of its own) and never read; each address opens another every 50 ms, keeps those whose welcome began (they hold
/// it) and drops the ones refused. What making way frees, they would take back within
/// milliseconds (the twentieth review: eight such addresses kept a person out of their own
/// 3 MB file in 28 tries of 30, the node at its allowance for large messages); and the
/// document their welcomes share would live as long as new sockets came for it, were it
/// shared for good. Room given back goes first to who was refused for want of it: the
/// owner, coming back a second after each 1013, is welcomed once the holders have taken
/// nothing for 5 s, not never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_welcomes_of_addresses_that_come_back_at_once_still_make_way() {
    come_back_at_once(Whose::TheirOwn).await;
}

/// As above, with the attackers' files the owner's own, public by their view links: the
/// copies are held to the owner's quarter of the budget, and there the owner, come with
/// their token, goes before the guests refused before them, who would otherwise be served
/// one after another as the holders make way (about 10 s each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_holding_copies_of_the_owners_files_keep_the_owner_out_briefly() {
    come_back_at_once(Whose::TheOwners).await;
}

/// Whose large files the attackers open.
#[derive(PartialEq)]
enum Whose {
    TheirOwn,
    TheOwners,
}

async fn come_back_at_once(whose: Whose) {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_WELCOME_BUDGET_BYTES", "33554432")]).await;
    let (id, _) = large_file(&r).await;
    let done = Arc::new(AtomicBool::new(false));
    let mut attackers = Vec::new();
    for n in 0..4u8 {
        let (id, view_key) = match whose {
            Whose::TheirOwn => attackers_large_file(&r).await,
            Whose::TheOwners => large_file(&r).await,
        };
        let done = done.clone();
        let port = r.node.port;
        attackers.push(tokio::spawn(async move {
            // One after another, as in the case before (a welcome's reservation is held
            // until the node's memory samples include it).
            tokio::time::sleep(Duration::from_millis(400) * n.into()).await;
            let (mut holding, mut asking) = (Vec::new(), VecDeque::<(Instant, Raw)>::new());
            let (mut opened, mut before_welcome) = (0u32, 0u32);
            while !done.load(Ordering::SeqCst) {
                let source = [127, 0, 0, 70 + n];
                // On its own task: a connection the node resets (its caps) ends that task only.
                let file = id.clone();
                let connecting = tokio::spawn(async move {
                    Raw::try_connect_from(source, port, &file, "", Some(4096)).await
                });
                if let Ok(Ok(mut raw)) = connecting.await {
                    // Each its own client (a client's second socket replaces its first).
                    raw.text(&Hello::key(&view_key).to_json().to_string()).await;
                    asking.push_back((Instant::now(), raw));
                    opened += 1;
                }
                while let Some((at, raw)) = asking.pop_front() {
                    match first_frame(&raw).await {
                        Some([TEXT, 0x7f]) => holding.push(raw),
                        // A close, or an ended connection: refused.
                        Some([0x88, _]) | Some([0, 0]) => {}
                        // Anything else came before the welcome.
                        Some(_) => before_welcome += 1,
                        None if at.elapsed() > Duration::from_secs(1) => {}
                        None => {
                            asking.push_front((at, raw));
                            break;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (opened, holding.len(), before_welcome)
        }));
    }
    // Long enough for the four to fill the allowance (a 7.8 MB welcome each, 32 MiB).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let started = Instant::now();
    let mut refusals = 0;
    let (owner, welcome) = loop {
        match Client::try_join(&r.node, &id, &Hello::token(&r.owner)).await {
            Ok(joined) => break joined,
            Err(refused) => {
                refusals += 1;
                assert!(
                    started.elapsed() < Duration::from_secs(15),
                    "the owner was kept out ({refused:?}, {refusals} tries)"
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    let welcomed_in = started.elapsed();
    done.store(true, Ordering::SeqCst);
    let (mut opened, mut begun, mut before_welcome) = (0, 0, 0);
    for a in attackers {
        let (o, b, w) = a.await.expect("an attacker");
        (opened, begun, before_welcome) = (opened + o, begun + b, before_welcome + w);
    }
    let case = match whose {
        Whose::TheirOwn => "4 addresses each open a socket every 50 ms to a file of their own and keep those sent a 7.8 MB welcome, unread (large-message budget 32 MiB)",
        Whose::TheOwners => "4 addresses each open a socket every 50 ms to a public file of the owner and keep those sent a 7.8 MB welcome, unread (large-message budget 32 MiB)",
    };
    figure(json!({
        "case": case,
        "owner_welcomed_in_ms": welcomed_in.as_millis(), "owner_refusals": refusals,
        "attacker_sockets": opened, "welcomes_begun": begun,
        "messages_before_a_welcome": before_welcome,
    }));
    assert_eq!(
        before_welcome, 0,
        "refused sockets were sent messages before their close"
    );
    assert_eq!(welcome["type"], "welcome");
    assert!(
        refusals > 0,
        "the holders never filled the budget: the case shows nothing"
    );
    owner.close().await;
}

/// Sockets of 32 addresses say hello to the owner's large file within a second and never
/// read. Their welcomes share one copy of the document, made once and charged once to the
/// node's allowance for large messages: every one of them is welcomed, and so is the
/// owner, at once, and the node's memory does not grow by a copy a joiner. Before, each
/// welcome was a copy of its own: four filled the allowance of 32 MiB, the other 28 were
/// refused 1013, and the owner was refused 20 times and let in after 10.6 s, once holders
/// that took nothing for 5 s were made to make way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_welcomes_of_one_file_share_one_copy_of_it() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_WELCOME_BUDGET_BYTES", "33554432")]).await;
    let (id, view_key) = large_file(&r).await;
    let rss_before = rss_kib(r.node.pid()) / 1024;
    let mut asking = Vec::new();
    for n in 0..32u8 {
        let upgraded =
            Raw::try_connect_from([127, 0, 0, 100 + n], r.node.port, &id, "", Some(4096)).await;
        let mut raw = upgraded.expect("an upgrade");
        // Each its own client (a client's second socket replaces its first).
        raw.text(&Hello::key(&view_key).to_json().to_string()).await;
        asking.push(raw);
    }
    let (begun, refused) = welcomes_begun(&asking).await;
    let started = Instant::now();
    let (mut owner, welcome, refusals) = owner_joins_within_20_s(&r, &id, started).await;
    let welcomed_in = started.elapsed();
    let rss_after = rss_kib(r.node.pid()) / 1024;
    figure(json!({
        "case": "32 addresses say hello to one 7.8 MB file and never read (large-message budget 32 MiB)",
        "welcomes_begun": begun, "refused": refused,
        "owner_welcomed_in_ms": welcomed_in.as_millis(), "owner_refusals": refusals,
        "rss_mib_before": rss_before, "rss_mib_after": rss_after,
    }));
    assert_eq!(begun, 32, "every unread welcome began ({refused} refused)");
    assert_eq!(refusals, 0, "the owner was refused");
    assert!(
        rss_after <= rss_before + 32,
        "the node grew from {rss_before} to {rss_after} MiB for 32 welcomes of one document"
    );
    owner_has_the_file_and_edits(&mut owner, &welcome).await;
    drop(asking);
}

/// Reads `raw` at about 40 KB/s (4 KiB every 100 ms) for `time`: the bytes it got.
async fn read_slowly(raw: &mut Raw, time: Duration) -> usize {
    let until = Instant::now() + time;
    let mut buf = vec![0u8; 4096];
    let mut got = 0;
    while Instant::now() < until {
        match tokio::time::timeout(Duration::from_millis(100), raw.stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got += n,
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    got
}

/// A person on a slow line (about 40 KB/s) opens a large file while the node's allowance
/// for large messages has room for one such welcome; another address's join then finds no
/// room, and holders whose peers took nothing for 5 s make way. The slow reader is taking
/// bytes all along and keeps its place for the 10 s looked at (a holder makes way for being
/// slow only past 5 s plus its messages' time at 1 MiB/s, 12.8 s for this welcome: see
/// `outbox::tests::a_holder_that_takes_too_slowly_makes_way`): the kernel holds only a
/// little of its welcome
/// unsent (`ATRIUM_KERNEL_UNSENT_BYTES`), so the node sees it take bytes every few
/// seconds. (With the kernel's own sizing, its send buffer held megabytes and the socket
/// was writable again only once a third of them had gone: a reader slower than about
/// 250 KB/s looked stalled and was closed 4008.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_of_a_large_welcome_keeps_its_place() {
    let _serial = SERIAL.lock().await;
    // Room for one 7.8 MB welcome, not two.
    let r = room(&[("ATRIUM_WELCOME_BUDGET_BYTES", "12582912")]).await;
    let (id, view_key) = large_file(&r).await;
    let hello = Hello::key(&view_key).to_json().to_string();
    let mut slow = Raw::try_connect_from([127, 0, 0, 50], r.node.port, &id, "", Some(4096))
        .await
        .expect("an upgrade");
    slow.text(&hello).await;
    let got_first = read_slowly(&mut slow, Duration::from_secs(7)).await;
    // Another address joins: its welcome does not fit while the slow one's is drawn.
    let refused = Client::try_join(&r.node, &id, &Hello::token(&r.owner)).await;
    let got_after = read_slowly(&mut slow, Duration::from_secs(3)).await;
    let closes = metric(
        &metrics_text(&r.node).await,
        "atrium_closes_total",
        &[("code", "4008")],
    );
    figure(json!({
        "case": "a reader at 40 KB/s of a 7.8 MB welcome while another's does not fit",
        "slow_reader_bytes_first_7_s": got_first, "then_3_s": got_after,
        "other_join": if refused.is_ok() { "welcomed" } else { "refused" },
        "closes_4008": closes,
    }));
    assert!(
        got_first > 100_000,
        "the slow reader got {got_first} bytes in 7 s"
    );
    assert_eq!(closes, 0.0, "the slow reader was closed as stalled");
    assert!(
        got_after > 50_000,
        "the slow reader got {got_after} bytes after"
    );
}

/// A large document's welcome is one copy shared by its joiners, written around each one's
/// own head: it reaches each of them whole, compressed for sockets that agreed to deflate
/// (the shared part compressed once, by a compressor of its own) and plain for the others,
/// the same document either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_large_welcome_arrives_whole_with_and_without_deflate() {
    let _serial = SERIAL.lock().await;
    let r = room(&[]).await;
    let (id, view_key) = large_file(&r).await;
    let mut docs = Vec::new();
    for extra in ["", DEFLATE_HEADER, DEFLATE_HEADER, ""] {
        let mut raw = Raw::connect(r.node.port, &id, extra, None).await;
        raw.text(&Hello::key(&view_key).to_json().to_string()).await;
        let welcome = raw.welcome().await;
        assert_eq!(welcome["role"], "viewer");
        assert!(welcome["people"].as_array().is_some_and(|p| !p.is_empty()));
        docs.push(welcome["doc"].clone());
    }
    assert_eq!(docs[0].as_object().map(|d| d.len()), Some(60_000));
    assert!(
        docs.iter().all(|d| *d == docs[0]),
        "the welcomes carry different documents"
    );
}

/// One account's large file, joined from four addresses with a one-op patch between joins
/// (a new version each time, so each welcome is a copy of its own), by sockets that never
/// read: the copies of one owner's files are charged at most a quarter of the node's budget
/// for large messages while it is short of half, so the owner of another file is welcomed
/// at once. Before, the four
/// copies filled the budget, and the other owner was refused until the holders had taken
/// nothing for 5 s (the twenty-third review's attack, by one account: with 33 MB copies read
/// at a trickle, 38 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_accounts_copies_keep_nobody_else_out() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_WELCOME_BUDGET_BYTES", "33554432")]).await;
    let (id, _) = large_file(&r).await;
    let attacker = new_account(&r.node, "attacker").await;
    let (own, view_key) = large_file_of(&r.node, &attacker).await;
    let (mut editor, _) = Client::try_join(&r.node, &own, &Hello::token(&attacker))
        .await
        .expect("the attacker in its own file");
    let mut asking = Vec::new();
    for n in 0..4u8 {
        let upgraded =
            Raw::try_connect_from([127, 0, 0, 80 + n], r.node.port, &own, "", Some(4096)).await;
        let mut raw = upgraded.expect("an upgrade");
        raw.text(&Hello::key(&view_key).to_json().to_string()).await;
        asking.push(raw);
        tokio::time::sleep(Duration::from_millis(400)).await;
        let op = json!({"op": "put", "id": format!("v{n}"), "props": {"x": n}});
        editor.patch_acked(u64::from(n) + 1, vec![op]).await;
    }
    let (begun, refused) = welcomes_begun(&asking).await;
    let started = Instant::now();
    let (mut owner, welcome, refusals) = owner_joins_within_20_s(&r, &id, started).await;
    figure(json!({
        "case": "one account's 7.8 MB file joined from 4 addresses, a new version before each join, never read (large-message budget 32 MiB)",
        "attacker_welcomes_begun": begun, "attacker_refused": refused,
        "other_owner_welcomed_in_ms": started.elapsed().as_millis(), "other_owner_refusals": refusals,
    }));
    // The first copy, then one more while half the budget stays free; the rest refused.
    assert_eq!((begun, refused), (2, 2), "copies held and joins refused");
    assert_eq!(refusals, 0, "the other owner was refused");
    owner_has_the_file_and_edits(&mut owner, &welcome).await;
    drop(asking);
}
