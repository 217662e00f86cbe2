use atrium_protocol::CloseCode;

use super::*;

#[tokio::test]
async fn overflow_closes_with_4008_and_first_close_wins() {
    let (out, rx) = outbox(2, 1 << 20, Metrics::new());
    assert!(out.send_text("a".into()));
    assert!(out.send_text("b".into()));
    assert!(!out.send_text("c".into()));
    out.close(CloseCode::ServiceRestart, "later request loses");
    assert_eq!(rx.close.closed().await.code, CloseCode::TooSlow.code());
}

#[tokio::test]
async fn bytes_are_bounded_and_given_back() {
    let (out, mut rx) = outbox(100, 10, Metrics::new());
    assert!(out.send_text("12345678".into()));
    let mut got = Vec::new();
    assert_eq!(rx.recv_many(&mut got, 10).await, 1);
    assert!(out.send_text("12345678".into()));
    assert!(!out.send_text("123".into()));
    assert_eq!(
        rx.close.requested().unwrap().code,
        CloseCode::TooSlow.code()
    );
}

#[tokio::test]
async fn a_held_queue_sends_its_welcome_first() {
    let budget = Budget::new(1 << 20);
    let (out, mut rx) = outbox(10, 1 << 20, Metrics::new());
    out.hold();
    assert!(out.send_text("presences".into()));
    assert!(out.send_text("join".into()));
    assert!(out.open_with(shared("welcome"), &budget));
    assert!(out.send_text("after".into()));
    let got: Vec<Vec<u8>> = rx
        .drain_now()
        .into_iter()
        .map(|o| match o {
            Out::Message(m) => m.payload().to_vec(),
            Out::Spliced(s) => s.payload(),
            Out::Control(b) | Out::Rest(b) => b.to_vec(),
        })
        .collect();
    assert_eq!(got, [&b"welcome"[..], b"presences", b"join", b"after"]);
}

/// A welcome refused for the budget closes the socket 1013, and what was held behind it,
/// or is sent after it, never goes out: nothing reaches a client before its welcome.
#[tokio::test]
async fn nothing_held_goes_out_when_the_welcome_cannot() {
    let budget = Budget::new(100);
    let (out, mut rx) = outbox(10, 10, Metrics::new());
    out.hold();
    assert!(out.send_text("presences".into()));
    assert!(!out.open_with(shared(vec![b'x'; 200]), &budget));
    // What the room sends before it drops the socket goes nowhere either.
    assert!(!out.send_text("join".into()));
    assert!(rx.drain_now().is_empty(), "the presences held went nowhere");
    assert_eq!(
        rx.close.requested().unwrap().code,
        CloseCode::TryAgainLater.code()
    );
}

#[tokio::test]
async fn large_messages_draw_on_the_budget() {
    let budget = Budget::new(100);
    let (out, mut rx) = outbox(10, 10, Metrics::new());
    assert!(out.open_with(shared(vec![b'x'; 80]), &budget));
    assert!(!budget.take_at(None, 30, 0, Draw::Welcome));
    rx.drain_now();
    assert!(budget.take_at(None, 100, 0, Draw::Welcome));
    budget.give(None, 100);
    let (out2, rx2) = outbox(10, 10, Metrics::new());
    assert!(!out2.open_with(shared(vec![b'x'; 200]), &budget));
    assert_eq!(
        rx2.close.requested().unwrap().code,
        CloseCode::TryAgainLater.code()
    );
}

/// Sockets of one address that never read their large welcomes hold at most an eighth of
/// the node-wide budget (and always one welcome, however large), so others still join.
#[tokio::test]
async fn one_address_holds_at_most_its_share_of_the_budget() {
    let budget = Budget::new(800);
    let attacker: std::net::IpAddr = "192.0.2.1".parse().unwrap();
    let joined = |address| {
        let (out, rx) = outbox(10, 10, Metrics::new());
        out.set_address(address);
        let welcomed = out.open_with(shared(vec![b'x'; 60]), &budget);
        (welcomed, rx)
    };
    let mut held = Vec::new();
    let (first, rx) = joined(attacker);
    assert!(first, "one large welcome is let through");
    held.push(rx);
    let (second, rx) = joined(attacker);
    assert!(!second, "a second would pass the address's share of 100");
    assert_eq!(
        rx.close.requested().unwrap().code,
        CloseCode::TryAgainLater.code()
    );
    // Another address is welcomed, its /64 counted as one.
    let (other, rx) = joined("2001:db8::1".parse().unwrap());
    assert!(other);
    held.push(rx);
    assert!(!joined("2001:db8::2".parse().unwrap()).0, "the same /64");
    // A welcome larger than the share still goes to an address that holds nothing.
    let (big, _) = {
        let (out, rx) = outbox(10, 10, Metrics::new());
        out.set_address("198.51.100.7".parse().unwrap());
        (out.open_with(shared(vec![b'x'; 500]), &budget), rx)
    };
    assert!(big);
    // Once its welcome is sent, the first address may have another.
    held.remove(0).drain_now();
    assert!(joined(attacker).0);
}

/// A socket of `address` sent a welcome of `len` bytes: its outbox, its receiver, and
/// whether the welcome was taken.
fn welcomed_from(
    budget: &Arc<Budget>,
    address: &str,
    len: usize,
) -> (Outbox, OutboxReceiver, bool) {
    let (out, rx) = outbox(10, 10, Metrics::new());
    out.set_address(address.parse().unwrap());
    let welcomed = out.open_with(shared(vec![b'x'; len]), budget);
    (out, rx, welcomed)
}

/// When a large message does not fit the budget, a socket that holds a draw and whose peer
/// has taken nothing for [`budget::MAKE_WAY_AFTER_MS`] is closed 4008, so the next try
/// fits; one whose peer takes bytes keeps its place.
#[tokio::test]
async fn a_holder_that_takes_nothing_makes_way() {
    let budget = Budget::new(100);
    let joined = |address: &str| welcomed_from(&budget, address, 90);
    let (stuck, mut stuck_rx, first) = joined("192.0.2.1");
    assert!(first);
    // Its writer takes the welcome and writes it to a peer that reads nothing.
    let mut writing = Vec::new();
    assert_eq!(stuck_rx.recv_many(&mut writing, 10).await, 1);
    let (_late, late_rx, second) = joined("192.0.2.2");
    assert!(!second, "no room while the first holds its draw");
    assert!(
        stuck_rx.close.requested().is_none(),
        "the first has not waited at all"
    );
    assert_eq!(late_rx.close.requested().unwrap().code, 1013);
    // Its peer takes bytes now and then: it keeps its place.
    stuck.write_waits();
    stuck.write_progressed();
    assert!(!joined("192.0.2.3").2);
    assert!(stuck_rx.close.requested().is_none());
    // Its peer has taken nothing for longer than the bound: it makes way.
    let long_ago = crate::clock::unix_ms() as u64 - super::budget::MAKE_WAY_AFTER_MS - 1_000;
    stuck
        .shared
        .write_waiting_since
        .store(long_ago, Ordering::Release);
    assert!(!joined("192.0.2.4").2, "this try is still refused");
    assert_eq!(
        stuck_rx.close.requested().unwrap().code,
        CloseCode::TooSlow.code()
    );
    // Its writer ends (the close cut the write short), and what it drew comes back: to
    // the first that was refused for want of it, when it comes back, not to a newcomer.
    drop(stuck_rx);
    assert!(
        !joined("192.0.2.5").2,
        "a newcomer took the room of those refused"
    );
    assert!(
        joined("192.0.2.2").2,
        "the first refused comes back and fits"
    );
}

/// A draw refused for its own address's share closes nobody: others making way would not
/// make room for it.
#[tokio::test]
async fn a_draw_over_its_addresss_share_closes_nobody() {
    let budget = Budget::new(800);
    let joined = |address: &str| welcomed_from(&budget, address, 90);
    let (stuck, stuck_rx, first) = joined("192.0.2.1");
    assert!(first);
    let long_ago = crate::clock::unix_ms() as u64 - super::budget::MAKE_WAY_AFTER_MS - 1_000;
    stuck
        .shared
        .write_waiting_since
        .store(long_ago, Ordering::Release);
    let (_, _, second) = joined("192.0.2.1");
    assert!(!second, "over the address's share of 100");
    assert!(
        stuck_rx.close.requested().is_none(),
        "nobody made way for it"
    );
}

/// The quick acknowledgement of a pong (`Outbox::ack_now`), seen from the client's side.
#[cfg(target_os = "linux")]
mod quick_ack {
    use std::os::fd::AsRawFd;
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// What the peer of `stream` has sent that this side has not acknowledged (TCP_INFO).
    #[allow(unsafe_code)]
    fn unacked(stream: &tokio::net::TcpStream) -> u32 {
        // SAFETY: getsockopt writes at most `len` bytes into `info`, which lives for the call.
        unsafe {
            let mut info: libc::tcp_info = std::mem::zeroed();
            let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
            let rc = libc::getsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&mut info as *mut libc::tcp_info).cast(),
                &mut len,
            );
            assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            info.tcpi_unacked
        }
    }

    /// A pong gets no answer, so its ACK waited for the kernel's delayed-ACK timer (40 ms or
    /// more), and a client with Nagle's algorithm on held its next edit until then (the
    /// every-attack test's slowest relays, 24-41 ms, once a ping interval). `ack_now`
    /// acknowledges at once.
    #[tokio::test]
    async fn ack_now_acknowledges_what_was_read_without_waiting_for_the_timer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        // Delayed ACKs, as on a connection past its first exchanges.
        socket2::SockRef::from(&server)
            .set_tcp_quickack(false)
            .unwrap();
        let (mut read, write) = server.into_split();
        let (out, _rx) = outbox(8, 1 << 20, Metrics::new());
        out.attach(Arc::new(write), false);
        let mut byte = [0u8; 1];
        // The ACK is delayed until the timer unless something sends it; the check right after
        // the read may still miss that window on a stalled machine, so it has a few tries.
        let mut delayed = false;
        for _ in 0..5 {
            client.write_all(b"p").await.unwrap();
            read.read_exact(&mut byte).await.unwrap();
            if unacked(&client) == 1 {
                delayed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            delayed,
            "the kernel acknowledged at once without being asked"
        );
        out.ack_now();
        // Well inside the timer's 40 ms: only `ack_now` can have sent it.
        let asked = Instant::now();
        while unacked(&client) != 0 {
            assert!(
                asked.elapsed() < Duration::from_millis(30),
                "still unacknowledged after ack_now"
            );
            tokio::task::yield_now().await;
        }
    }
}

/// A moment to draw at (ms since the Unix epoch), for the budget's own clock.
const T0: u64 = 1_000_000;

/// The client address `192.0.2.n`.
fn ip(n: u8) -> Option<std::net::IpAddr> {
    Some([192, 0, 2, n].into())
}

/// A budget of 800 that addresses 1 to 8 hold all of, 100 each (their share), drawn at `T0`.
fn held_by_eight() -> Arc<Budget> {
    let budget = Budget::new(800);
    for n in 1..=8 {
        assert!(budget.take_at(ip(n), 100, T0, Draw::Welcome));
    }
    budget
}

/// Room given back goes first to the address that was refused for want of it, not to
/// whoever asks next: sockets of many addresses that never read, each replaced the moment
/// it is closed, took every byte that making way freed (the twentieth review: a person
/// opening their own 3 MB file once a second refused 28 times in 30). An address that holds
/// more waits behind one that holds less; a place not come back to is lost.
#[test]
fn room_given_back_goes_first_to_who_was_refused_for_it() {
    let t0 = T0;
    // Eight addresses hold all of it, 100 each (an eighth: their share).
    let budget = held_by_eight();
    let person = ip(100);
    assert!(
        !budget.take_at(person, 300, t0 + 10, Draw::Welcome),
        "no room yet"
    );
    // A holder is closed (it made way) and gives back; its address at once asks again.
    budget.give(ip(1), 100);
    assert!(
        !budget.take_at(ip(1), 100, t0 + 20, Draw::Welcome),
        "an address came back and took the room the person waits for"
    );
    assert!(
        !budget.take_at(ip(2), 50, t0 + 30, Draw::Welcome),
        "at its share anyway"
    );
    budget.give(ip(2), 100);
    budget.give(ip(3), 100);
    assert!(!budget.take_at(ip(2), 100, t0 + 40, Draw::Welcome));
    assert!(
        budget.take_at(person, 300, t0 + 50, Draw::Welcome),
        "the person's turn"
    );
    // Behind the person, the earliest refused of those holding nothing comes next (1, then 2).
    budget.give(person, 300);
    assert!(
        !budget.take_at(ip(2), 250, t0 + 60, Draw::Welcome),
        "1 was refused before 2"
    );
    assert!(budget.take_at(ip(1), 100, t0 + 70, Draw::Welcome));
    assert!(budget.take_at(ip(2), 200, t0 + 80, Draw::Welcome));
    // A place is kept for PLACE_KEPT_MS after the last refusal, then lost.
    let budget = Budget::new(400);
    assert!(budget.take_at(ip(101), 300, t0, Draw::Welcome));
    assert!(
        !budget.take_at(ip(102), 200, t0 + 10, Draw::Welcome),
        "no room"
    );
    budget.give(ip(101), 300);
    // (102 is promised at most a quarter of the allowance: 100 of its 200.)
    assert!(
        !budget.take_at(ip(103), 350, t0 + 20, Draw::Welcome),
        "the room is 102's"
    );
    let later = t0 + 10 + owners::PLACE_KEPT_MS;
    assert!(
        budget.take_at(ip(103), 350, later, Draw::Welcome),
        "102 never came back"
    );
}

/// An ask larger than the whole allowance can never be served: it is refused without a
/// place, and holds up nobody (the twenty-first review: one client retrying a file too large
/// for the allowance would have kept every other large message on the node refused).
#[test]
fn an_ask_larger_than_the_whole_allowance_holds_up_nobody() {
    let budget = Budget::new(100);
    let t0 = T0;
    for k in 0..5 {
        assert!(!budget.take_at(ip(1), 150, t0 + k * 1000, Draw::Welcome));
    }
    assert!(budget.take_at(ip(2), 80, t0 + 6000, Draw::Welcome));
}

/// An address whose holder was closed for taking nothing while others waited keeps no
/// place and comes after every other for a while, however early it was refused; a large
/// message to a socket already welcomed (a restore's patch) goes whenever it fits, not
/// behind others' welcomes (its room's people would otherwise be closed 1013).
#[test]
fn stalled_addresses_come_last_and_members_do_not_wait() {
    let t0 = T0;
    let budget = held_by_eight();
    assert!(!budget.take_at(ip(9), 100, t0 + 10, Draw::Welcome), "full");
    // 9's holder (a socket it got later) is closed for taking nothing while others waited.
    budget.stalled_at(ip(9).unwrap(), t0 + 20);
    let person = ip(100);
    assert!(!budget.take_at(person, 100, t0 + 30, Draw::Welcome), "full");
    budget.give(ip(1), 100);
    assert!(
        !budget.take_at(ip(9), 100, t0 + 40, Draw::Welcome),
        "an address that stalled went ahead of the person, refused before it"
    );
    assert!(
        !budget.take_at(ip(50), 100, t0 + 50, Draw::Welcome),
        "the person's turn"
    );
    assert!(
        budget.take_at(ip(50), 100, t0 + 60, Draw::Member),
        "a restore's patch to a member waited behind a welcome"
    );
    budget.give(ip(50), 100);
    assert!(budget.take_at(person, 100, t0 + 70, Draw::Welcome));
}

/// A welcome that cannot be queued because the socket's writer is gone closes the socket
/// too, so what the room sends before it drops the socket does not pile up behind the gate.
#[tokio::test]
async fn a_welcome_to_a_writer_that_is_gone_closes_and_keeps_nothing() {
    let budget = Budget::new(100);
    let (out, rx) = outbox(10, 10, Metrics::new());
    out.hold();
    drop(rx);
    assert!(!out.open_with(shared("welcome"), &budget));
    assert!(out.is_closing());
    assert!(!out.send_text("join".into()));
    assert_eq!(out.shared.bytes.load(Ordering::Acquire), 0);
}

/// A socket that ends with a large welcome still queued (its writer never took it) gives
/// back what the welcome drew: before, the node's allowance for large messages lost it for
/// good.
#[tokio::test]
async fn a_socket_that_ends_with_a_large_welcome_queued_gives_it_back() {
    let budget = Budget::new(1000);
    let (out, rx) = outbox(10, 10, Metrics::new());
    out.set_address(ip(1).unwrap());
    assert!(out.open_with(shared(vec![b'x'; 200]), &budget));
    assert_eq!(budget.left(), 800);
    drop(rx);
    assert_eq!(budget.left(), 1000);
    assert_eq!(out.shared.drawn.load(Ordering::Acquire), 0);
}

/// Welcomes that share one document are charged for it once, node-wide; each socket counts
/// it as held until written (so it can be made to make way), and each address holding it
/// counts it against its share once, only while it does: the address it was made for is not
/// charged for others that keep it (the twenty-second review: a sharer reading a few bytes
/// a minute kept it against the owner's share for hours). The charge comes back when the
/// last holder is done with it.
#[tokio::test]
async fn welcomes_sharing_a_document_are_charged_for_it_once() {
    use crate::ws::{Middle, Spliced};
    let budget = Budget::new(8000);
    let (first, mut first_rx) = outbox(10, 100, Metrics::new());
    first.set_address(ip(1).unwrap());
    let charge = budget
        .charge(by_link(1), 600, &owner(1))
        .expect("room for it");
    let doc = Middle::new(vec![b'x'; 600], Some(Arc::new(charge)));
    let welcome = || Spliced::new(Bytes::from_static(b"{\"doc\":"), doc.clone(), "}");
    let mut others = Vec::new();
    for n in [2, 3, 3, 4, 5] {
        let (out, rx) = outbox(10, 100, Metrics::new());
        out.set_address(ip(n).unwrap());
        assert!(out.open_with(welcome(), &budget));
        assert_eq!(out.shared.drawn.load(Ordering::Acquire), 600);
        others.push((out, rx));
    }
    assert!(first.open_with(welcome(), &budget));
    drop(doc);
    assert_eq!(budget.left(), 7400, "one charge for six");
    // Two sockets of one address hold it once against the share of 1000: another 400 fits.
    let other = Middle::new(vec![b'y'; 400], None);
    assert!(budget.may_hold(ip(3), &other));

    let mut got = Vec::new();
    first_rx.recv_many(&mut got, 10).await;
    assert_eq!(got.len(), 1);
    drop(got);
    first_rx.done_writing();
    assert_eq!(first.shared.drawn.load(Ordering::Acquire), 0, "written");
    // Its address holds nothing now, though others hold the copy made for it.
    assert!(budget.take_at(ip(1), 1000, 0, Draw::Welcome));
    budget.give(ip(1), 1000);
    for (out, rx) in others.drain(..4) {
        drop(rx);
        assert_eq!(out.shared.drawn.load(Ordering::Acquire), 0);
    }
    assert_eq!(budget.left(), 7400, "one still holds it");
    let (_, mut last_rx) = others.pop().unwrap();
    assert_eq!(last_rx.drain_now().len(), 1);
    assert_eq!(budget.left(), 8000);
}

/// A shared copy of a document no larger than half a send queue is not charged on the
/// allowance: each socket counts it in its queue, as a welcome of its own was.
#[tokio::test]
async fn a_copy_under_half_a_queue_is_counted_in_each_queue() {
    use crate::ws::{Middle, Spliced};
    let budget = Budget::new(1000);
    let doc = Middle::new(vec![b'x'; 300], None);
    let (out, _rx) = outbox(10, 1000, Metrics::new());
    let welcome = Spliced::new(Bytes::from_static(b"{\"doc\":"), doc, "}");
    let len = welcome.payload_len();
    assert!(out.open_with(welcome, &budget));
    assert_eq!(out.shared.bytes.load(Ordering::Acquire), len);
    assert_eq!(out.shared.drawn.load(Ordering::Acquire), 0);
    assert_eq!(budget.left(), 1000);
}

/// An address refused with a place and then let in by sharing a copy keeps no place: what
/// it was promised would hold up others' large welcomes for nothing (the twenty-second
/// review).
#[tokio::test]
async fn an_address_served_by_a_shared_copy_keeps_no_place() {
    let budget = Budget::new(800);
    assert!(budget.take_at(ip(1), 700, T0, Draw::Welcome));
    assert!(
        !budget.take_at(ip(2), 400, T0, Draw::Welcome),
        "refused, with a place"
    );
    budget.give(ip(1), 700);
    assert!(
        !budget.take_at(ip(3), 700, T0 + 1, Draw::Welcome),
        "what the place was promised holds the draw up"
    );
    budget.served(ip(2), &owner(9));
    assert!(budget.take_at(ip(3), 700, T0 + 1, Draw::Welcome));
}

/// A copy for a guest at address `n`, come by a link key.
fn by_link(n: u8) -> CopyFor {
    CopyFor {
        address: ip(n),
        by_link: true,
    }
}

/// An owner, by number.
fn owner(n: u8) -> crate::store::Holder {
    crate::store::Holder::Account(crate::ids::AccountId::parse(&format!("owner{n}")).unwrap())
}

/// The shared copies of one owner's files are charged at most a quarter of the allowance
/// while it is short of half (one copy of any size the allowance has room for always): joined
/// from many addresses with a new version each time, one account's large file no longer
/// fills the allowance for everyone's (the twenty-third review's attack, with one account).
#[test]
fn one_owners_copies_hold_at_most_a_quarter_of_the_allowance() {
    let budget = Budget::new(1000);
    // While half stays free, an owner's copies are not held to its quarter ...
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(budget.charge(by_link(1), 200, &owner(1)).expect("room"));
    }
    // ... past it they are: at most half in all for one owner.
    assert!(budget.charge(by_link(2), 200, &owner(1)).is_none());
    assert_eq!(budget.left(), 600, "a refused copy takes nothing");
    drop(held);
    // Others' copies take more than half: owner 1's first copy (for the address refused
    // first) is let through whatever its size, the second only within its 250.
    let others = budget
        .charge(by_link(9), 500, &owner(9))
        .expect("another owner's");
    let first = budget
        .charge(by_link(2), 200, &owner(1))
        .expect("the owner's first copy");
    assert!(budget.charge(by_link(3), 100, &owner(1)).is_none());
    let another = budget
        .charge(by_link(4), 250, &owner(4))
        .expect("another owner's");
    drop(first);
    let again = budget
        .charge(by_link(3), 200, &owner(1))
        .expect("room again");
    let within = budget
        .charge(by_link(5), 50, &owner(1))
        .expect("within its quarter");
    assert!(budget.charge(by_link(6), 1, &owner(1)).is_none());
    drop((others, another, again, within));
    assert_eq!(budget.left(), 1000);
}

/// An allowance of 1,000 with another owner's copies charged half of it (so an owner's
/// quarter binds), and that charge, to keep.
fn half_taken() -> (Arc<Budget>, Charge) {
    let budget = Budget::new(1000);
    let others = budget.charge(by_link(9), 500, &owner(9));
    (budget, others.expect("another owner's"))
}

/// The addresses refused for want of room in an owner's share are served in the order they
/// were refused, before others that come after them, unless they stop coming back or are
/// remembered as stalled (a guest opening sockets to someone's public file every 50 ms took
/// what making way freed before a reader coming back each second could; with one place
/// only, a second address of the guest's took it again each time the first was served: the
/// twenty-eighth review).
#[test]
fn the_refused_for_an_owners_share_are_served_in_order() {
    let (budget, _others) = half_taken();
    let held = budget
        .charge(by_link(1), 200, &owner(1))
        .expect("a first copy");
    assert!(budget.charge(by_link(2), 100, &owner(1)).is_none());
    // 40 more would fit the owner's 250, but not beside what the first refused asked.
    assert!(budget.charge(by_link(3), 40, &owner(1)).is_none());
    drop(held);
    assert!(
        budget.charge(by_link(3), 200, &owner(1)).is_none(),
        "room freed goes first to the address refused first"
    );
    let first = budget.charge(by_link(2), 100, &owner(1)).expect("its turn");
    let after = budget
        .charge(by_link(3), 150, &owner(1))
        .expect("then the next");
    drop((first, after));
    // A place is lost by an address remembered as stalled.
    let held = budget
        .charge(by_link(1), 200, &owner(1))
        .expect("a first copy");
    assert!(budget.charge(by_link(4), 100, &owner(1)).is_none());
    budget.stalled_at(ip(4).unwrap(), crate::clock::unix_ms() as u64);
    let next = budget
        .charge(by_link(5), 50, &owner(1))
        .expect("the stalled keep no place");
    drop(next);
    // Two refused, then a newcomer asking again and again: each of the two in its turn.
    assert!(budget.charge(by_link(6), 100, &owner(1)).is_none());
    assert!(budget.charge(by_link(7), 100, &owner(1)).is_none());
    drop(held);
    assert!(budget.charge(by_link(8), 100, &owner(1)).is_none());
    let sixth = budget
        .charge(by_link(6), 100, &owner(1))
        .expect("the first in line");
    assert!(
        budget.charge(by_link(8), 100, &owner(1)).is_none(),
        "the newcomer went before the second in line"
    );
    let seventh = budget
        .charge(by_link(7), 100, &owner(1))
        .expect("the second in line");
    drop((sixth, seventh));
    assert_eq!(budget.left(), 500);
}

/// An address ranked by its place: one that keeps a place as the file's owner, then asks
/// by a link (behind one NAT address), is not held up by its own place (the twenty-ninth
/// review).
#[test]
fn a_place_does_not_hold_up_its_own_address() {
    let (budget, _others) = half_taken();
    let held = budget
        .charge(by_link(1), 200, &owner(1))
        .expect("a first copy");
    let owners_own = CopyFor {
        address: ip(2),
        by_link: false,
    };
    assert!(budget.charge(owners_own, 100, &owner(1)).is_none());
    drop(held);
    assert!(budget.charge(by_link(2), 200, &owner(1)).is_some());
}

/// Past the places an owner's share keeps, a newcomer that holds nothing takes the place of
/// the last that holds something, and is served before addresses that hold large messages
/// (the twenty-ninth review: places held by addresses asking again and again, each served a
/// copy in turn, kept every other reader out for good).
#[test]
fn a_newcomer_that_holds_nothing_goes_before_holders() {
    let budget = Budget::new(100_000);
    let _others = budget
        .charge(by_link(9), 50_000, &owner(9))
        .expect("another owner's");
    let held = budget
        .charge(by_link(1), 20_000, &owner(1))
        .expect("a first copy");
    for a in 10..74 {
        assert!(
            budget.take_at(ip(a), 1, 0, Draw::Member),
            "a draw of its own"
        );
        assert!(budget.charge(by_link(a), 10_000, &owner(1)).is_none());
    }
    assert!(budget.charge(by_link(200), 10_000, &owner(1)).is_none());
    drop(held);
    let newcomer = budget.charge(by_link(200), 10_000, &owner(1));
    assert!(newcomer.is_some(), "the newcomer waited behind holders");
}

/// In an owner's share the file's owner (or one the app grants the file to) comes before
/// guests who came by a link key, though a guest was refused first: guests holding copies
/// of someone's public file do not keep the owner out of it for rounds on end.
#[test]
fn the_owner_comes_before_guests_in_its_share() {
    let (budget, _others) = half_taken();
    let owners_own = CopyFor {
        address: ip(3),
        by_link: false,
    };
    let held = budget
        .charge(by_link(1), 200, &owner(1))
        .expect("a first copy");
    assert!(budget.charge(by_link(2), 200, &owner(1)).is_none());
    assert!(budget.charge(owners_own, 200, &owner(1)).is_none());
    drop(held);
    assert!(
        budget.charge(by_link(2), 200, &owner(1)).is_none(),
        "the guest refused first waits for the owner"
    );
    let own = budget
        .charge(owners_own, 200, &owner(1))
        .expect("the owner first");
    drop(own);
    assert!(budget.charge(by_link(2), 200, &owner(1)).is_some());
}

/// Short of one owner's share, only the holders of that owner's copies make way: a reader of
/// another owner's file that took nothing for as long is not closed for it (the
/// twenty-seventh review: an account could close slow readers anywhere on the node at will).
#[tokio::test]
async fn short_of_an_owners_share_only_its_copies_holders_make_way() {
    use crate::ws::{Middle, Spliced};
    let budget = Budget::new(1000);
    let _others = budget
        .charge(by_link(9), 400, &owner(9))
        .expect("another owner's");
    let copy_of = |o: u8| {
        let charge = budget
            .charge(by_link(o), 200, &owner(o))
            .expect("a first copy");
        Middle::new(vec![b'x'; 200], Some(Arc::new(charge)))
    };
    let holding = |doc: &Arc<Middle>, a: u8| {
        let (out, rx) = outbox(10, 100, Metrics::new());
        out.set_address(ip(a).unwrap());
        let welcome = Spliced::new(Bytes::from_static(b"{\"doc\":"), doc.clone(), "}");
        assert!(out.open_with(welcome, &budget));
        (out, rx)
    };
    let (mine, theirs) = (copy_of(1), copy_of(2));
    let (of_mine, mine_rx) = holding(&mine, 1);
    let (of_theirs, theirs_rx) = holding(&theirs, 2);
    drop((mine, theirs));
    let long_ago = crate::clock::unix_ms() as u64 - super::budget::MAKE_WAY_AFTER_MS - 1_000;
    for holder in [&of_mine, &of_theirs] {
        let since = &holder.shared.write_waiting_since;
        since.store(long_ago, Ordering::Release);
    }
    assert!(budget.charge(by_link(3), 100, &owner(1)).is_none());
    let closed = |rx: &OutboxReceiver| rx.close.requested().map(|c| c.code);
    assert_eq!(closed(&mine_rx), Some(CloseCode::TooSlow.code()));
    assert_eq!(
        closed(&theirs_rx),
        None,
        "another owner's reader was closed"
    );
}

/// The addresses remembered as stalled are bounded: past [`stalled::MOST_STALLED`], those
/// whose time is up are forgotten first, then the one remembered longest (an attacker with
/// many addresses cannot grow the list without end, nor keep a new address off it).
#[test]
fn the_stalled_addresses_remembered_are_bounded() {
    let budget = Budget::new(800);
    let address = |n: u32| std::net::IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n));
    for n in 0..5_000 {
        budget.stalled_at(address(n), T0 + u64::from(n));
    }
    assert_eq!(budget.stalled_len(), stalled::MOST_STALLED);
    // Past the bound the newest are remembered, the oldest forgotten (before, an address
    // past the 4,096th was not remembered, and came first however it had stalled).
    assert!(budget.is_stalled(address(4_999), T0 + 5_000));
    assert!(!budget.is_stalled(address(0), T0 + 5_000));
    assert!(budget.is_stalled(address(5_000 - 4_096), T0 + 5_000));
    // Once their 60 s are over, they make room for newer ones.
    budget.stalled_at(address(9_999), T0 + 65_001);
    assert_eq!(budget.stalled_len(), 1);
}

/// A holder whose peer takes bytes, but slower than
/// [`budget::SLOWEST_HOLDER_BYTES_PER_SECOND`], makes way when another's draw does not fit,
/// once it has held longer than 5 s plus its message's time at that rate; one within that
/// time keeps its place (the twenty-third review: holders reading 17.5 KB/s, never seen
/// taking nothing for 5 s, kept the allowance for half an hour).
#[tokio::test]
async fn a_holder_that_takes_too_slowly_makes_way() {
    let len = 3 << 20;
    let budget = Budget::new(len + 100);
    let (slow, mut slow_rx, first) = welcomed_from(&budget, "192.0.2.1", len);
    assert!(first);
    let mut writing = Vec::new();
    assert_eq!(slow_rx.recv_many(&mut writing, 10).await, 1);
    // Its peer takes bytes now and then.
    slow.write_waits();
    slow.write_progressed();
    // Six seconds held of the eight a 3 MiB message may take: it keeps its place.
    let now = crate::clock::unix_ms() as u64;
    slow.shared
        .holding_since
        .store(now - 6_000, Ordering::Release);
    assert!(!welcomed_from(&budget, "192.0.2.2", len).2);
    assert!(slow_rx.close.requested().is_none(), "within its time");
    // Twelve: it makes way.
    slow.shared
        .holding_since
        .store(now - 12_000, Ordering::Release);
    assert!(!welcomed_from(&budget, "192.0.2.3", len).2);
    let close = slow_rx
        .close
        .requested()
        .expect("closed for taking too slowly");
    assert_eq!(close.code, CloseCode::TooSlow.code());
    assert!(close.reason.contains("slower than"), "{}", close.reason);
}

/// A hold is judged by everything the socket was given since it began, not by what it
/// holds at the moment: a reader that took a 6 MiB welcome in 10 s and was then sent a
/// restore's 1 MiB patch is not slow (the twenty-fourth review: judged by the patch alone it
/// was allowed 6 s and closed).
#[tokio::test]
async fn a_hold_is_judged_by_all_it_was_given() {
    let budget = Budget::new(100 << 20);
    let (fast, mut fast_rx, first) = welcomed_from(&budget, "192.0.2.1", 6 << 20);
    assert!(first);
    let now = crate::clock::unix_ms() as u64;
    fast.shared
        .holding_since
        .store(now - 10_000, Ordering::Release);
    assert!(fast.send_large(shared(vec![b'p'; 1 << 20]), &budget));
    // The welcome is written; the patch is still held.
    let mut got = Vec::new();
    assert_eq!(fast_rx.recv_many(&mut got, 1).await, 1);
    fast_rx.done_writing();
    assert_eq!(fast.shared.drawn.load(Ordering::Acquire), 1 << 20);
    // Another's draw does not fit: 10 s for 7 MiB is within 5 s plus 7 s.
    assert!(!welcomed_from(&budget, "192.0.2.2", (100 << 20) - 1000).2);
    assert!(
        fast_rx.close.requested().is_none(),
        "a fast reader was closed"
    );
}
