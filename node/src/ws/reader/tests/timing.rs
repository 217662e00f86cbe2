//! Reader tests about time and memory: the fragment timeout, and a buffer that
//! follows the bytes that came.

use super::*;

#[tokio::test]
async fn slow_fragments_time_out() {
    let (mut client, server) = duplex(1024);
    let limits = ReaderLimits {
        max_message: 1000,
        fragment_timeout: Duration::from_millis(150),
        inflate_ratio: 0,
    };
    let mut r = Reader::new(server, limits, false);
    client
        .write_all(&frame(MORE, false, opcode::TEXT, b"a"))
        .await
        .unwrap();
    let started = Instant::now();
    // Pings keep arriving, but the message does not complete.
    let pinger = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let ping = frame(FIN, false, opcode::PING, b"");
            if client.write_all(&ping).await.is_err() {
                break;
            }
        }
    });
    let e = loop {
        match r.next().await {
            Ok(Incoming::Ping(_)) => continue,
            other => break other,
        }
    };
    assert!(matches!(e, Err(ReadError::FragmentTimeout)), "{e:?}");
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        ReadError::FragmentTimeout.close_code().map(|c| c.code()),
        Some(1008)
    );
    drop(r);
    pinger.await.unwrap();
}

#[tokio::test]
async fn buffer_shrinks_after_a_big_frame() {
    let big = "z".repeat(200_000);
    let mut r = reader([text(&big), text("small")].concat(), limits(1 << 20), false);
    assert_eq!(r.next().await.unwrap(), t(&big));
    assert!(r.buf.capacity() <= BUF_START, "{}", r.buf.capacity());
    assert_eq!(r.next().await.unwrap(), t("small"));
    assert!(r.buf.capacity() <= BUF_START);
}

#[tokio::test]
async fn buffer_follows_the_bytes_not_the_header() {
    // A header claiming 1 MB, then only 10 KB of payload.
    let wire = frame(FIN, false, opcode::TEXT, &[b'a'; 1 << 20]);
    let (mut client, server) = duplex(1 << 16);
    client.write_all(&wire[..10_000]).await.unwrap();
    let mut r = Reader::new(server, limits(1 << 20), false);
    let waited = tokio::time::timeout(Duration::from_millis(50), r.next()).await;
    assert!(waited.is_err(), "the message is not complete");
    assert!(r.buf.capacity() <= 32 * 1024, "{}", r.buf.capacity());
    let rest = wire[10_000..].to_vec();
    let writer = tokio::spawn(async move { client.write_all(&rest).await });
    let message = r.next().await.unwrap();
    writer.await.unwrap().unwrap();
    assert_eq!(message, Incoming::Text("a".repeat(1 << 20)));
}

#[tokio::test(start_paused = true)]
async fn control_frames_are_read_at_their_pace() {
    let pings: Vec<u8> = (0..100)
        .flat_map(|_| frame(FIN, false, opcode::PING, b"p"))
        .chain(text("after"))
        .collect();
    let mut r = reader(pings, limits(1000), false);
    let started = tokio::time::Instant::now();
    for i in 0..100 {
        let next = r.next().await;
        assert!(matches!(next, Ok(Incoming::Ping(_))), "{i}: {next:?}");
        if i < CONTROL_BURST as usize {
            assert_eq!(
                started.elapsed(),
                Duration::ZERO,
                "the burst is read at once"
            );
        }
    }
    assert!(matches!(r.next().await, Ok(Incoming::Text(t)) if t == "after"));
    // 80 past the burst at 10 a second: the socket was not read meanwhile.
    let took = started.elapsed();
    let paced = (100.0 - CONTROL_BURST) / CONTROL_PER_SECOND;
    assert!(
        took >= Duration::from_secs_f64(paced - 0.2) && took < Duration::from_secs_f64(paced + 1.0),
        "{took:?}"
    );
}

/// Pongs are control frames too: each one read costs the node a system call (its quick
/// acknowledgement, `Outbox::ack_now`), so a flood of unasked-for pongs is read at the same
/// pace as pings.
#[tokio::test(start_paused = true)]
async fn pongs_are_read_at_the_control_pace_too() {
    let pongs: Vec<u8> = (0..100)
        .flat_map(|_| frame(FIN, false, opcode::PONG, b""))
        .collect();
    let mut r = reader(pongs, limits(1000), false);
    let started = tokio::time::Instant::now();
    for i in 0..100 {
        let next = r.next().await;
        assert!(matches!(next, Ok(Incoming::Pong)), "{i}: {next:?}");
    }
    let paced = (100.0 - CONTROL_BURST) / CONTROL_PER_SECOND;
    assert!(
        started.elapsed() >= Duration::from_secs_f64(paced - 0.2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_fragment_deadline_holds_while_paced_pings_wait() {
    // An unfinished message, then more pings than the pace lets through in a long time.
    let mut wire = frame(MORE, false, opcode::TEXT, b"{");
    for _ in 0..100 {
        wire.extend(frame(FIN, false, opcode::PING, b""));
    }
    let limits = ReaderLimits {
        fragment_timeout: Duration::from_millis(500),
        ..limits(1000)
    };
    let mut r = reader(wire, limits, false);
    let started = tokio::time::Instant::now();
    let e = loop {
        match r.next().await {
            Ok(Incoming::Ping(_)) => continue,
            other => break other,
        }
    };
    assert!(matches!(e, Err(ReadError::FragmentTimeout)), "{e:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(1),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn frames_of_any_kind_are_read_at_their_pace() {
    let n = 3_000;
    let wire: Vec<u8> = (0..n).flat_map(|_| text("")).collect();
    let mut r = reader(wire, limits(1000), false);
    let started = tokio::time::Instant::now();
    for i in 0..n {
        let next = r.next().await;
        assert!(
            matches!(next, Ok(Incoming::Text(ref t)) if t.is_empty()),
            "{i}: {next:?}"
        );
    }
    let took = started.elapsed();
    let paced = (n as f64 - FRAME_BURST) / FRAMES_PER_SECOND;
    assert!(
        took >= Duration::from_secs_f64(paced - 0.1) && took < Duration::from_secs_f64(paced + 1.0),
        "{took:?}"
    );
}
