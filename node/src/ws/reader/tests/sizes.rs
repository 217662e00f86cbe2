//! Reader tests: The message size limit: refused from the header, and over fragments.

use super::*;

#[tokio::test]
async fn oversize_header_refused_before_payload() {
    // Only the header is sent, and the pipe stays open: waiting would hang.
    let header = frame(FIN, false, opcode::TEXT, &[0; 1001])[..8].to_vec();
    let (mut client, server) = duplex(64);
    client.write_all(&header).await.unwrap();
    let mut r = Reader::new(server, limits(1000), false);
    let e = tokio::time::timeout(Duration::from_secs(5), r.next())
        .await
        .unwrap();
    assert!(matches!(e, Err(ReadError::TooBig)));
    assert_eq!(ReadError::TooBig.close_code().map(|c| c.code()), Some(1009));
    // A 2^62-byte header is refused the same way.
    let huge = [0x81, 0xff, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4].to_vec();
    assert!(matches!(first_error(huge, false).await, ReadError::TooBig));
    drop(client);
}

#[tokio::test]
async fn reassembled_message_over_limit() {
    let wire = [
        frame(MORE, false, opcode::TEXT, &[b'a'; 600]),
        frame(FIN, false, opcode::CONTINUATION, &[b'a'; 401]),
    ]
    .concat();
    let (got, e) = read_all(wire, false, 1000).await;
    assert!(got.is_empty());
    assert!(matches!(e, ReadError::TooBig));
}
