//! Reader tests: Compressed messages (permessage-deflate), and a compression bomb.

use super::*;

#[tokio::test]
async fn compressed_messages_decode() {
    let message = "{\"type\":\"patch\",\"ops\":[\"insert\",42,\"hello\"]}".repeat(50);
    let data = client_deflate(message.as_bytes());
    let (a, b) = data.split_at(data.len() / 3);
    let (b, c) = b.split_at(b.len() / 2);
    let wire = [
        frame(FIN, true, opcode::TEXT, &data),
        frame(FIN, true, opcode::TEXT, &[0x00]),
        // Fragmented: RSV1 on the first frame only.
        frame(MORE, true, opcode::TEXT, a),
        frame(MORE, false, opcode::CONTINUATION, b),
        frame(FIN, false, opcode::CONTINUATION, c),
        text("plain"),
    ]
    .concat();
    let (got, end) = read_all(wire, true, message.len()).await;
    assert_eq!(got, [t(&message), t(""), t(&message), t("plain")]);
    assert!(matches!(end, ReadError::Closed));
}

#[tokio::test]
async fn compressed_bomb_is_too_big() {
    // Small on the wire, 8 MiB inflated. (How small depends on the zlib backend
    // the workspace unifies on: zlib-ng's fastest level matches less.)
    let data = client_deflate(&vec![b'a'; 8 << 20]);
    assert!(data.len() < 256 * 1024, "{} bytes on the wire", data.len());
    let e = first_error(frame(FIN, true, opcode::TEXT, &data), true).await;
    assert!(matches!(e, ReadError::TooBig), "{e:?}");
}
