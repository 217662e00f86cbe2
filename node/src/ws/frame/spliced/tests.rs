use bytes::Bytes;

use super::*;
use crate::ws::deflate::{inflate, TAIL};

/// The first byte, and the payload, of the one frame `pieces` make when written in order.
fn one_frame(pieces: &[Bytes]) -> (u8, Vec<u8>) {
    let wire: Vec<u8> = pieces.concat();
    let (len, start) = match wire[1] & 0x7f {
        126 => (u16::from_be_bytes([wire[2], wire[3]]) as usize, 4),
        127 => (
            u64::from_be_bytes(wire[2..10].try_into().unwrap()) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    assert_eq!(wire.len(), start + len, "the header counts every piece");
    (wire[0], wire[start..].to_vec())
}

fn document(len: usize) -> Vec<u8> {
    let node = "\"n1\":{\"type\":\"rect\",\"x\":12,\"y\":34},";
    format!("{{{}}}", node.repeat(len / node.len())).into_bytes()
}

#[test]
fn a_spliced_message_is_one_frame_of_head_middle_and_tail() {
    let doc = document(200_000);
    let middle = Middle::new(doc.clone(), None);
    let head = Bytes::from_static(b"{\"type\":\"welcome\",\"you\":\"p1\",\"doc\":");
    let msg = Spliced::new(head.clone(), middle.clone(), "}");
    let whole = [&head[..], &doc[..], b"}"].concat();
    assert_eq!(msg.payload(), whole);
    assert_eq!(msg.own_len(), head.len() + 1);
    assert_eq!(msg.middle_len(), doc.len());

    let (first, payload) = one_frame(&msg.frames(false));
    assert_eq!(first, 0x81, "a final text frame, not compressed");
    assert_eq!(payload, whole);

    assert!(
        !msg.is_ready(true),
        "the middle is compressed on first demand"
    );
    let pieces = msg.frames(true);
    let (first, payload) = one_frame(&pieces);
    assert_eq!(first, 0xc1, "a final compressed text frame");
    assert!(payload.len() < whole.len() / 4);
    let mut data = payload;
    data.extend_from_slice(&TAIL);
    assert_eq!(inflate(&data, whole.len()).unwrap(), whole);

    // Another joiner's message shares the middle's bytes, compressed once.
    assert!(msg.is_ready(true));
    let other = Spliced::new(Bytes::from_static(b"{\"you\":\"p2\",\"doc\":"), middle, "}");
    let again = other.frames(true);
    assert_eq!(again[1].as_ptr(), pieces[1].as_ptr());
    assert_eq!(
        other.frames(false)[1].as_ptr(),
        msg.frames(false)[1].as_ptr()
    );
}

#[test]
fn a_middle_that_does_not_compress_goes_plain_to_every_socket() {
    let noise = crate::ws::test_bytes::noise(7, 100_000);
    let msg = Spliced::new(
        Bytes::from_static(b"["),
        Middle::new(noise.clone(), None),
        "]",
    );
    let (first, payload) = one_frame(&msg.frames(true));
    assert_eq!(first, 0x81);
    assert_eq!(payload, [&b"["[..], &noise[..], b"]"].concat());
}

#[test]
fn what_a_middle_keeps_lives_until_its_last_bytes_are_dropped() {
    let kept = Arc::new(());
    let middle = Middle::new(document(100_000), Some(kept.clone()));
    let a = Spliced::new(Bytes::new(), middle.clone(), "");
    let b = a.clone();
    let plain = a.frames(false);
    let deflated = b.frames(true);
    drop((middle, a, b));
    assert!(
        Arc::strong_count(&kept) > 1,
        "the frames being written hold it"
    );
    drop(plain);
    assert!(
        Arc::strong_count(&kept) > 1,
        "the compressed frame holds it"
    );
    drop(deflated);
    assert_eq!(Arc::strong_count(&kept), 1);
}
