//! Where the WebSocket frames in a byte stream end, without looking at their payloads.
//!
//! The router passes a node's bytes to its client as they come, in whatever pieces the kernel
//! hands over. Only a drain needs to know where a frame ends: the 1012 close frame it adds must
//! not land inside one of the node's frames. So the router follows the frame headers (2 to 14
//! bytes each) and skips each payload by its length: the cost is per frame, not per byte.

/// The position of a byte stream relative to its frames.
#[derive(Debug, Default, Clone)]
pub struct Frames {
    /// The header being read, when it came in pieces.
    header: [u8; 14],
    have: usize,
    /// Payload bytes of the current frame still to come.
    left: u64,
}

impl Frames {
    /// No frame is begun and unfinished: a frame may be sent here.
    pub fn at_boundary(&self) -> bool {
        self.have == 0 && self.left == 0
    }

    /// Follows the stream's next `bytes`. With `stop_at_boundary`, stops at the first frame
    /// boundary (at once, when already at one). Returns how many bytes were followed.
    pub fn advance(&mut self, bytes: &[u8], stop_at_boundary: bool) -> usize {
        let mut at = 0;
        while at < bytes.len() {
            if stop_at_boundary && self.at_boundary() {
                break;
            }
            if self.left > 0 {
                let skip = self.left.min((bytes.len() - at) as u64);
                self.left -= skip;
                at += skip as usize;
                continue;
            }
            self.header[self.have] = bytes[at];
            self.have += 1;
            at += 1;
            if let Some((len, payload)) = parse(&self.header[..self.have]) {
                if self.have == len {
                    self.have = 0;
                    self.left = payload;
                }
            }
        }
        at
    }
}

/// A frame header's length and its payload's length, once enough of the header is known.
fn parse(header: &[u8]) -> Option<(usize, u64)> {
    let second = *header.get(1)?;
    let short = u64::from(second & 0x7f);
    let extended = match short {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    let len = 2 + extended + mask;
    let payload = match extended {
        0 => short,
        n => {
            let bytes = header.get(2..2 + n)?;
            bytes.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b))
        }
    };
    Some((len, payload))
}
