use super::*;
use atrium_protocol::CloseCode;

#[test]
fn close_frames_are_unmasked_with_the_code_first() {
    let f = close_frame(CloseCode::ServiceRestart, "bye");
    assert_eq!(&f[..], &[0x88, 5, 0x03, 0xF4, b'b', b'y', b'e']);
    let long = close_frame(CloseCode::ServiceRestart, &"é".repeat(100));
    assert!(long.len() <= 127);
    assert_eq!(long[1] as usize, long.len() - 2);
    assert!(std::str::from_utf8(&long[4..]).is_ok());
}

#[test]
fn requests_are_counted_while_their_guard_lives() {
    let t = Tracker::new(Arc::new(Metrics::new()));
    let a = t.request();
    let b = t.request();
    assert_eq!(t.requests(), 2);
    drop(a);
    drop(b);
    assert_eq!(t.requests(), 0);
}

#[tokio::test]
async fn closing_all_wakes_each_socket_and_they_count_until_dropped() {
    let t = Tracker::new(Arc::new(Metrics::new()));
    let node = NodeId::parse("n0").unwrap();
    let guard = t.socket(&node);
    let closing = guard.closing();
    assert!(!closing.is_set());
    assert_eq!(t.close_all(), 1);
    assert!(closing.is_set());
    // A wait that starts after the close ends at once.
    closing.wait().await;
    assert_eq!(t.sockets(), 1);
    drop(guard);
    assert_eq!(t.sockets(), 0);
    assert_eq!(t.close_all(), 0);
}

/// An unmasked frame with `payload_len` bytes of payload (each byte `fill`).
fn frame(payload_len: usize, fill: u8) -> Vec<u8> {
    let mut f = vec![0x82];
    match payload_len {
        n if n < 126 => f.push(n as u8),
        n if n <= 0xffff => {
            f.push(126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend(std::iter::repeat_n(fill, payload_len));
    f
}

#[test]
fn frame_boundaries_are_found_whatever_pieces_the_bytes_come_in() {
    let sizes = [0, 1, 125, 126, 127, 300, 65_535, 65_536, 70_000];
    let mut stream = Vec::new();
    let mut ends = vec![0];
    for (i, n) in sizes.iter().enumerate() {
        stream.extend(frame(*n, i as u8));
        ends.push(stream.len());
    }
    // A masked client frame: 4 key bytes after the length.
    stream.extend([0x81, 0x80 | 3, 1, 2, 3, 4, b'a', b'b', b'c']);
    ends.push(stream.len());
    for piece in [1, 2, 3, 7, 13, 1000, stream.len()] {
        let mut frames = Frames::default();
        let mut at = 0;
        for chunk in stream.chunks(piece) {
            frames.advance(chunk, false);
            at += chunk.len();
            assert_eq!(
                frames.at_boundary(),
                ends.contains(&at),
                "piece {piece} at {at}"
            );
        }
    }
}

#[test]
fn advancing_to_a_boundary_stops_at_the_end_of_the_frame_in_progress() {
    let mut stream = frame(10, 1);
    stream.extend(frame(200, 2));
    let mut frames = Frames::default();
    // Three bytes into the first frame's payload.
    assert_eq!(frames.advance(&stream[..5], false), 5);
    assert!(!frames.at_boundary());
    // The rest of the first frame, not a byte of the second.
    assert_eq!(frames.advance(&stream[5..], true), 12 - 5);
    assert!(frames.at_boundary());
    // Already at a boundary: nothing is taken.
    assert_eq!(frames.advance(&stream[12..], true), 0);
    // A header that comes in pieces is no boundary until its payload is through.
    assert_eq!(frames.advance(&stream[12..14], false), 2);
    assert!(!frames.at_boundary());
    assert_eq!(frames.advance(&stream[14..], true), stream.len() - 14);
    assert!(frames.at_boundary());
}
