use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// A guard over one end of a pipe, and the other end to write to as the client.
fn guarded(heads: &Arc<Heads>) -> (HeadGuard, HeadWatch, DuplexStream) {
    let (client, server) = tokio::io::duplex(256 * 1024);
    let (guard, watch) = HeadGuard::new(Box::new(server), heads.clone());
    (guard, watch, client)
}

/// Reads until a read fails, and answers the failure.
async fn read_until_refused(guard: &mut HeadGuard) -> io::Error {
    loop {
        if let Err(e) = read_some(guard).await {
            return e;
        }
    }
}

/// Reads what there is to read now, or the error.
async fn read_some(guard: &mut HeadGuard) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 64 * 1024];
    let n = guard.read(&mut buf).await?;
    buf.truncate(n);
    Ok(buf)
}

#[test]
fn a_head_ends_at_its_blank_line_across_reads() {
    for (pieces, end) in [
        (
            &[&b"GET / HTTP/1.1\r\nhost: x\r\n\r\nbody"[..]][..],
            Some((0, 27)),
        ),
        (
            &[&b"GET / HTTP/1.1\r\nhost: x\r"[..], &b"\n\r\nbody"[..]][..],
            Some((1, 3)),
        ),
        (
            &[&b"GET / HTTP/1.1\nhost: x\n"[..], &b"\nrest"[..]][..],
            Some((1, 1)),
        ),
        (&[&b"GET / HTTP/1.1\r\nhost: x\r\n"[..]][..], None),
        // Empty lines before the request line are skipped, never its end.
        (
            &[&b"\r\n\r\n\n"[..], &b"GET / HTTP/1.1\r\nx: y\r\n\r\n"[..]][..],
            Some((1, 24)),
        ),
        (&[&b"\r\n\r\nGET / HTTP/1.1\r\nx-pad: aaaa"[..]][..], None),
    ] {
        let mut head = Head::new();
        let found = pieces
            .iter()
            .enumerate()
            .find_map(|(i, p)| head.end_in(p).map(|at| (i, at)));
        assert_eq!(found, end, "{pieces:?}");
    }
}

#[tokio::test]
async fn a_head_over_32_kib_fails_its_read_and_a_body_passes() {
    let heads = Heads::new();
    let (mut guard, watch, mut client) = guarded(&heads);
    // A head that ends, then a body far larger than a head may be: it passes.
    client
        .write_all(b"POST /api/x HTTP/1.1\r\ncontent-length: 100000\r\n\r\n")
        .await
        .unwrap();
    client.write_all(&[b'a'; 100_000]).await.unwrap();
    let mut got = 0;
    while got < 100_000 + 48 {
        got += read_some(&mut guard).await.unwrap().len();
    }
    assert_eq!(heads.unfinished(), 0);
    // The connection's next request: a head that never ends.
    watch.next_request();
    client
        .write_all(b"GET / HTTP/1.1\r\nx-pad: ")
        .await
        .unwrap();
    client.write_all(&[b'a'; 40_000]).await.unwrap();
    let mut read = 0;
    let refused = loop {
        match read_some(&mut guard).await {
            Ok(bytes) => read += bytes.len(),
            Err(e) => break e,
        }
    };
    assert_eq!(refused.kind(), io::ErrorKind::InvalidData, "{refused}");
    assert!(
        read <= HEAD_BYTES,
        "{read} bytes of head read before the refusal"
    );
    drop(guard);
    assert_eq!(
        heads.unfinished(),
        0,
        "a dropped connection gives its head back"
    );
}

#[tokio::test]
async fn empty_lines_before_a_head_count_and_do_not_end_it() {
    let heads = Heads::new();
    let (mut guard, _watch, mut client) = guarded(&heads);
    client
        .write_all(b"\r\n\r\nGET / HTTP/1.1\r\nx-pad: ")
        .await
        .unwrap();
    client.write_all(&[b'a'; 40_000]).await.unwrap();
    let refused = read_until_refused(&mut guard).await;
    assert_eq!(refused.kind(), io::ErrorKind::InvalidData, "{refused}");
}

#[tokio::test(start_paused = true)]
async fn a_head_that_takes_over_10_s_fails_its_read() {
    let heads = Heads::new();
    let (mut guard, _watch, mut client) = guarded(&heads);
    client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    assert_eq!(read_some(&mut guard).await.unwrap().len(), 16);
    assert_eq!(heads.unfinished(), 2 * 16);
    // Nothing more comes: the read waits for the head's deadline, then fails.
    let refused = read_some(&mut guard).await.unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::TimedOut, "{refused}");
}

#[tokio::test]
async fn unfinished_heads_are_bounded_across_the_router() {
    let heads = Heads::new();
    // Other connections' unfinished heads, near the router's bound.
    heads.unfinished.store(HEADS_BYTES - 100, Ordering::Relaxed);
    let (mut guard, _watch, mut client) = guarded(&heads);
    client
        .write_all(b"GET / HTTP/1.1\r\nx-pad: ")
        .await
        .unwrap();
    client.write_all(&[b'a'; 1000]).await.unwrap();
    let refused = read_until_refused(&mut guard).await;
    assert_eq!(refused.kind(), io::ErrorKind::Other, "{refused}");
    drop(guard);
    assert_eq!(heads.unfinished(), HEADS_BYTES - 100);
    // Someone's everyday request, its head whole in one read, is taken all the same.
    let (mut guard, _watch, mut client) = guarded(&heads);
    let head = b"GET /api/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer abc\r\n\r\n";
    client.write_all(head).await.unwrap();
    assert_eq!(read_some(&mut guard).await.unwrap(), head);
    assert_eq!(heads.unfinished(), HEADS_BYTES - 100);
}
