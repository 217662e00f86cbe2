use bytes::Bytes;

use super::*;

#[test]
fn outgoing_compresses_once_when_large() {
    let payload = Bytes::from("{\"op\":\"insert\",\"text\":\"hello\"}".repeat(64));
    let msg = Outgoing::new(payload.clone(), true);
    assert_eq!(msg.payload_len(), payload.len());
    assert_eq!(msg.payload(), &payload[..]);
    assert!(msg.deflated.get().is_none(), "lazy");
    assert_eq!(msg.frame(false), text(&payload));
    assert!(
        msg.deflated.get().is_none(),
        "plain sockets do not compress"
    );
    let first = msg.frame(true);
    let second = msg.frame(true);
    assert_eq!(first[0], 0xc1);
    assert!(first.len() < payload.len() / 2);
    // The same buffer, not a second compression.
    assert_eq!(first.as_ptr(), second.as_ptr());
    assert_eq!(first.as_ptr(), msg.deflated.get().unwrap().as_ptr());
}

#[test]
fn outgoing_never_compresses_small_or_presence() {
    let small = Outgoing::new(Bytes::from(vec![b'a'; COMPRESS_THRESHOLD - 1]), true);
    let presence = Outgoing::new(Bytes::from(vec![b'a'; 10_000]), false);
    for msg in [small, presence] {
        let frame = msg.frame(true);
        assert_eq!(frame[0], 0x81);
        assert_eq!(frame.as_ptr(), msg.frame(false).as_ptr());
        assert!(msg.deflated.get().is_none());
    }
    let at_threshold = Outgoing::new(Bytes::from(vec![b'a'; COMPRESS_THRESHOLD]), true);
    assert_eq!(at_threshold.frame(true)[0], 0xc1);
}

#[test]
fn outgoing_keeps_plain_when_deflate_does_not_help() {
    let noise = crate::ws::test_bytes::noise(99, 4096);
    let msg = Outgoing::new(Bytes::from(noise), true);
    assert_eq!(msg.frame(true).as_ptr(), msg.frame(false).as_ptr());
}
