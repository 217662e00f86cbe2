//! A batch of frames on its way to the socket, and how much of it the socket took.
//!
//! A write cut short (a close asked for while the peer had stopped reading) can leave
//! the peer in the middle of a frame. Whatever is written after it, the close frame
//! above all, must begin where that frame ends, or the peer reads it as the frame's
//! payload and sees a broken stream instead of the close code. The batch knows where
//! each frame ends and how much the socket took, so what is left of the frame cut short
//! can be written first.

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Batches up to this size are gathered into one buffer for one write.
const GATHER: usize = 64 * 1024;
/// The gathering buffer a socket keeps between writes; one grown past it for a
/// large batch is freed once written, so a quiet socket holds no more than this.
pub(super) const GATHER_KEEP: usize = 2 * 1024;

/// The frames of a batch, piece by piece, the last piece of each frame marked (rather than
/// a list of where frames end: every socket's task holds its batch, and is sized for it).
#[derive(Default)]
pub(super) struct Batch {
    pieces: Vec<Piece>,
    /// Bytes of the batch the socket has taken.
    taken: usize,
    /// Small batches are copied here and written at once.
    gather: Vec<u8>,
}

struct Piece {
    bytes: Bytes,
    /// The last piece of a frame (a large welcome's frame is in several).
    ends_frame: bool,
    /// The rest of a frame begun before the batch (a sender wrote its start): no frame
    /// begins at this piece, even at the batch's start.
    continues: bool,
}

impl Batch {
    /// Adds a piece of the frame being added; [`Batch::frame_done`] after its last.
    pub(super) fn push(&mut self, bytes: Bytes) {
        self.pieces.push(Piece {
            bytes,
            ends_frame: false,
            continues: false,
        });
    }

    /// The rest of a frame whose start the socket took before this batch: whole, it ends
    /// that frame.
    pub(super) fn push_rest(&mut self, bytes: Bytes) {
        self.pieces.push(Piece {
            bytes,
            ends_frame: true,
            continues: true,
        });
    }

    /// The pieces added since the last frame make one whole frame.
    pub(super) fn frame_done(&mut self) {
        if let Some(last) = self.pieces.last_mut() {
            last.ends_frame = true;
        }
    }

    /// A whole frame of one piece.
    pub(super) fn push_frame(&mut self, frame: Bytes) {
        self.push(frame);
        self.frame_done();
    }

    /// Writes the batch with as few writes as it can, counting what the socket takes as it
    /// goes: dropped halfway (cancelled), [`Batch::unfinished`] says what is left of the
    /// frame it was in (an `AsyncWrite` that is pending has written nothing). One loop with
    /// no helper future and nothing more held across its waits: every socket's task is
    /// sized for this future beside its close watch.
    pub(super) async fn write<W: AsyncWrite + Unpin + ?Sized>(
        &mut self,
        io: &mut W,
    ) -> std::io::Result<()> {
        debug_assert!(
            self.pieces.last().is_none_or(|p| p.ends_frame),
            "a frame not marked done"
        );
        let total: usize = self.pieces.iter().map(|p| p.bytes.len()).sum();
        let gathered = self.pieces.len() > 1 && total <= GATHER;
        if gathered {
            self.gather.clear();
            self.gather.reserve_exact(total);
            for piece in &self.pieces {
                self.gather.extend_from_slice(&piece.bytes);
            }
        }
        // The piece being written (the gathering buffer, when gathered), and how far.
        let (mut piece, mut at) = (0, 0);
        loop {
            let buf: &[u8] = match (gathered, self.pieces.get(piece)) {
                (true, _) if piece == 0 => &self.gather,
                (false, Some(p)) => &p.bytes,
                _ => break,
            };
            if at == buf.len() {
                (piece, at) = (piece + 1, 0);
                continue;
            }
            let n = io.write(&buf[at..]).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            at += n;
            self.taken += n;
        }
        if self.gather.capacity() > GATHER_KEEP {
            self.gather = Vec::new();
        }
        io.flush().await
    }

    /// What is left of the frame the socket was in the middle of when a write stopped:
    /// nothing when it stopped between frames.
    pub(super) fn unfinished(&self) -> Vec<Bytes> {
        let mut rest = Vec::new();
        // Where the piece starts, and whether a frame begins there.
        let (mut at, mut frame_starts) = (0, true);
        for piece in &self.pieces {
            let end = at + piece.bytes.len();
            let inside = rest.is_empty() && at <= self.taken && self.taken < end;
            if inside && self.taken == at && frame_starts && !piece.continues {
                return rest;
            }
            if inside || !rest.is_empty() {
                rest.push(piece.bytes.slice(self.taken.max(at) - at..));
                if piece.ends_frame {
                    return rest;
                }
            }
            (at, frame_starts) = (end, piece.ends_frame);
        }
        rest
    }

    /// Empty again, keeping the lists' room (and the gathering buffer's, when small); the
    /// bytes of it the socket took.
    pub(super) fn clear(&mut self) -> usize {
        self.pieces.clear();
        std::mem::take(&mut self.taken)
    }

    /// Bytes of the batch the socket has taken so far.
    #[cfg(test)]
    pub(super) fn taken(&self) -> usize {
        self.taken
    }

    /// The batch's bytes, in one buffer.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> Vec<u8> {
        self.pieces.iter().flat_map(|p| p.bytes.to_vec()).collect()
    }

    #[cfg(test)]
    pub(super) fn gather_capacity(&self) -> usize {
        self.gather.capacity()
    }

    #[cfg(test)]
    pub(super) fn gather_ptr(&self) -> *const u8 {
        self.gather.as_ptr()
    }

    #[cfg(test)]
    pub(super) fn set_taken(&mut self, taken: usize) {
        self.taken = taken;
    }
}
