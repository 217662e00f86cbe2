//! The close frame the router sends a client itself when it ends a proxied socket.

use bytes::{BufMut, Bytes, BytesMut};

use atrium_protocol::CloseCode;

/// A server-to-client WebSocket close frame (FIN + opcode 8, unmasked) with `code` and a short
/// UTF-8 `reason` (at most 123 bytes, as control frames carry at most 125).
pub fn close_frame(code: CloseCode, reason: &str) -> Bytes {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let reason = &reason.as_bytes()[..end];
    let mut frame = BytesMut::with_capacity(4 + reason.len());
    frame.put_u8(0x88);
    frame.put_u8((2 + reason.len()) as u8);
    frame.put_u16(code.code());
    frame.put_slice(reason);
    frame.freeze()
}
