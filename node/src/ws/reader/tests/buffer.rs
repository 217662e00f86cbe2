//! Reader tests: what a socket's read buffer costs between messages.

use futures_util::FutureExt;

use super::*;

/// A reader whose client stays connected; the client end is returned to write to.
fn open_reader() -> (DuplexStream, Reader<DuplexStream>) {
    let (client, server) = duplex(1 << 20);
    (client, Reader::new(server, limits(1 << 20), false))
}

#[tokio::test]
async fn between_messages_a_socket_holds_no_read_buffer() {
    let (mut client, mut r) = open_reader();
    client
        .write_all(&[text("one"), text("two")].concat())
        .await
        .unwrap();
    assert_eq!(r.next().await.unwrap(), t("one"));
    assert_eq!(r.next().await.unwrap(), t("two"));
    assert_eq!(r.buf.capacity(), 0);
}

#[tokio::test]
async fn the_buffer_goes_back_after_a_large_message() {
    let (mut client, mut r) = open_reader();
    let large = "L".repeat(300_000);
    // Then half a frame: the reader keeps it and waits for the rest.
    let wire = [text(&large), text("small"), text("after")[..4].to_vec()].concat();
    client.write_all(&wire).await.unwrap();
    assert!(matches!(r.next().await.unwrap(), Incoming::Text(t) if t.len() == 300_000));
    assert_eq!(r.next().await.unwrap(), t("small"));
    assert!(
        r.next().now_or_never().is_none(),
        "half a frame is not a message"
    );
    assert_eq!(r.buf.len(), 4);
    assert!(r.buf.capacity() <= BUF_START, "{}", r.buf.capacity());
}
