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
            Out::Control(b) => b.to_vec(),
        })
        .collect();
    assert_eq!(got, [&b"welcome"[..], b"presences", b"join", b"after"]);
}

/// A welcome refused for the budget closes the socket 1013, and what was held behind it
/// never goes out: nothing reaches a client before its welcome.
#[tokio::test]
async fn nothing_held_goes_out_when_the_welcome_cannot() {
    let budget = Budget::new(100);
    let (out, mut rx) = outbox(10, 10, Metrics::new());
    out.hold();
    assert!(out.send_text("presences".into()));
    assert!(!out.open_with(shared(vec![b'x'; 200]), &budget));
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
    assert!(!budget.take(None, 30));
    rx.drain_now();
    assert!(budget.take(None, 100));
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
