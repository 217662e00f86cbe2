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

#[test]
fn a_socket_gets_one_close_frame_only_when_the_router_ends_it() {
    let t = Tracker::new(Arc::new(Metrics::new()));
    let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let node = NodeId::parse("n0").unwrap();
    // -1 is never a live descriptor: close_all marks it but shuts nothing down.
    let mut guard = t.socket(&node, -1, local, local);
    assert_eq!(guard.close_frame_at_end(), None);
    assert_eq!(t.close_all(), 0);
    assert!(guard.close_frame_at_end().is_some());
    assert_eq!(guard.close_frame_at_end(), None);
    assert_eq!(t.sockets(), 1);
    drop(guard);
    assert_eq!(t.sockets(), 0);
}
