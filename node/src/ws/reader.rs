//! Decoding client frames (RFC 6455 §5) into messages.
//!
//! All state lives in [`Reader`]: the only await is a read into its buffer,
//! which is cancel-safe, so `next()` may be dropped at any await (inside
//! `tokio::select!`) and called again without losing or corrupting data.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::{timeout_at, Instant};

mod incoming;
mod limits;
mod message;
mod scratch;
mod wire;

use super::Liveness;
pub use incoming::{Incoming, ReadError};
pub use limits::{ReaderLimits, INFLATE_CREDIT};
use message::Partial;
use wire::parse_header;

/// Read buffer capacity while a frame is incomplete; grown for big frames, then
/// shrunk back.
const BUF_START: usize = 4 * 1024;

/// Frames larger than this are read only once the [`Allowance`] admits their bytes.
pub const LARGE_FRAME: usize = 64 * 1024;

/// How often a large frame the allowance refused asks again.
const ALLOWANCE_RETRY: Duration = Duration::from_millis(50);

/// Control frames (pings, pongs) a client may send a second once [`CONTROL_BURST`] is
/// spent; past it the socket is not read until the pace allows (backpressure). A client
/// needs one ping now and then; each costs a read and, for a ping, a pong written back
/// (the sixth review's ping flood took both cores from 8 sockets with no credentials).
pub const CONTROL_PER_SECOND: f64 = 10.0;
pub const CONTROL_BURST: f64 = 20.0;

/// Frames of any kind a client may send a second once [`FRAME_BURST`] is spent, read no
/// faster past it: far above what a person sends (presence at 80 a second, messages at 60,
/// each one frame in browsers), far below what empty frames cost (the sixth review's second
/// reading: 250 million empty continuation frames in 12 s took both cores, no credentials).
pub const FRAMES_PER_SECOND: f64 = 500.0;
pub const FRAME_BURST: f64 = 1_000.0;

/// The client's paces, control frames and frames of any kind: tokens spent as frames are
/// taken, waited for before the next is read. Kept small: every socket's task holds one
/// (`socket::tests::a_socket_task_stays_small`).
#[derive(Debug, Clone, Copy)]
struct Paces {
    controls: f32,
    frames: f32,
    at: Instant,
}

impl Paces {
    fn new() -> Self {
        Self {
            controls: CONTROL_BURST as f32,
            frames: FRAME_BURST as f32,
            at: Instant::now(),
        }
    }

    /// A frame was taken; `control` when it was a ping or a pong.
    fn spend(&mut self, control: bool) {
        self.frames -= 1.0;
        if control {
            self.controls -= 1.0;
        }
    }

    /// When the next frame may be read (now, unless a pace is in debt).
    fn ready_at(&mut self, now: Instant) -> Instant {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        let earn =
            |tokens: f32, rate: f64, burst: f64| (tokens as f64 + elapsed * rate).min(burst) as f32;
        self.controls = earn(self.controls, CONTROL_PER_SECOND, CONTROL_BURST);
        self.frames = earn(self.frames, FRAMES_PER_SECOND, FRAME_BURST);
        let debt =
            |tokens: f32, rate: f64| Duration::from_secs_f64((-tokens as f64).max(0.0) / rate);
        now + debt(self.controls, CONTROL_PER_SECOND).max(debt(self.frames, FRAMES_PER_SECOND))
    }
}

/// Memory that large frames are read into, asked for before their bytes are: the node's
/// memory budget, so that many sockets sending large messages at once wait their turn
/// (their senders see their socket stop reading) instead of taking the node past it.
pub trait Allowance: Send + Sync {
    /// Whether a frame of `bytes` may be read now; once true, its bytes count as taken.
    fn admits(&self, bytes: usize) -> bool;
    /// `bytes` of the message it admitted have come (they may come long after it did).
    fn arrived(&self, _bytes: usize) {}
    /// The message those bytes were for is complete (or never will be): what the reader
    /// held for it is handed on or dropped.
    fn release(&self, _bytes: usize) {}
    /// A compressed message became `bytes` of text: memory no frame's size foretold.
    fn inflated(&self, _bytes: usize) {}
}

/// Reads client frames from `R` and reassembles messages.
pub struct Reader<R> {
    io: R,
    buf: Vec<u8>,
    limits: ReaderLimits,
    deflate: bool,
    partial: Option<Partial>,
    finished: bool,
    /// Payload bytes of data frames received, as sent.
    received: usize,
    /// Bytes of text those frames became.
    inflated: usize,
    /// Asked before a large frame is read; none: every frame is read at once.
    allowance: Option<Arc<dyn Allowance>>,
    /// Bytes the allowance admitted for the message under way (none: it has not asked),
    /// released when the message ends.
    held: usize,
    /// The client's pace of control frames, and of frames of any kind.
    paces: Paces,
    /// Told when the reader waits on the socket and when bytes come (the watchdog's clock).
    liveness: Option<Arc<Liveness>>,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// A reader; `deflate` says whether permessage-deflate was agreed.
    pub fn new(io: R, limits: ReaderLimits, deflate: bool) -> Self {
        Self {
            io,
            buf: Vec::new(),
            limits,
            deflate,
            partial: None,
            finished: false,
            received: 0,
            inflated: 0,
            allowance: None,
            held: 0,
            paces: Paces::new(),
            liveness: None,
        }
    }

    /// Large frames are read only once `allowance` admits them; until then the socket
    /// is not read (backpressure).
    pub fn set_allowance(&mut self, allowance: Arc<dyn Allowance>) {
        self.allowance = Some(allowance);
    }

    /// Keeps `liveness` told of when the reader listens and hears: silence counts only while
    /// it waits on the socket.
    pub fn set_liveness(&mut self, liveness: Arc<Liveness>) {
        self.liveness = Some(liveness);
    }

    /// Changes the largest message accepted from now on (small before the hello).
    pub fn set_max_message(&mut self, max: usize) {
        self.limits.max_message = max;
    }

    /// Bytes of message payload received so far, as sent on the wire.
    pub fn received(&self) -> usize {
        self.received
    }

    /// The next message or control frame. Cancel-safe.
    pub async fn next(&mut self) -> Result<Incoming, ReadError> {
        if self.finished {
            return Err(ReadError::Closed);
        }
        let result = self.read_message().await;
        if matches!(result, Err(_) | Ok(Incoming::Close(_))) {
            self.finished = true;
            self.buf = Vec::new();
            self.partial = None;
        }
        if matches!(
            result,
            Err(_) | Ok(Incoming::Text(_) | Incoming::Binary | Incoming::Close(_))
        ) {
            self.release_held();
        }
        result
    }

    /// Hands back what the allowance admitted for the message that just ended.
    fn release_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        if let (Some(allowance), true) = (&self.allowance, held > 0) {
            allowance.release(held);
        }
    }

    async fn read_message(&mut self) -> Result<Incoming, ReadError> {
        loop {
            // A fragmented message's time runs out even while frames wait in the buffer
            // (a socket pinging faster than its pace has a backlog of them).
            if self
                .partial
                .as_ref()
                .is_some_and(|p| Instant::now() >= p.deadline)
            {
                return Err(ReadError::FragmentTimeout);
            }
            self.keep_pace().await;
            let Some(header) = parse_header(&self.buf)? else {
                self.fill(0).await?;
                continue;
            };
            self.check(&header)?;
            let total = header.size + header.len;
            // Asked whether the frame is in the buffer yet or not: small fragments come
            // several to a read (the sixth review's second reading).
            if self.held == 0 {
                if let Some(claim) = self.claim(&header, total) {
                    self.wait_for_allowance(claim).await?;
                }
            }
            if self.buf.len() < total {
                self.fill(total).await?;
                continue;
            }
            let message = self.take_frame(&header, total)?;
            self.consume(total);
            if let Some(message) = message {
                return Ok(message);
            }
        }
    }

    /// What a data frame must have the allowance admit before it is read, once its message
    /// is large: a message in one frame claims its size; a fragmented one claims all it may
    /// still grow to, once, so that a socket never holds part of a claim while it waits for
    /// more (sockets of one address waiting on each other would never finish). Nothing for
    /// control frames and small messages. The sixth review held a megabyte per socket in
    /// unfinished messages of 60 KB fragments, which never asked.
    fn claim(&self, header: &wire::Header, total: usize) -> Option<usize> {
        use crate::ws::frame::opcode;
        if header.opcode >= opcode::CLOSE {
            return None;
        }
        let before = match (&self.partial, header.opcode) {
            (Some(p), opcode::CONTINUATION) => p.len(),
            _ => 0,
        };
        if before + total <= LARGE_FRAME {
            return None;
        }
        let whole = header.fin && header.opcode != opcode::CONTINUATION;
        Some(match whole {
            true => total,
            false => self.limits.max_message.saturating_sub(before).max(total),
        })
    }

    /// Waits while the client is past its pace of control frames or of frames. Cancel-safe:
    /// the paces are worked out again on the next call.
    async fn keep_pace(&mut self) {
        let now = Instant::now();
        let ready = self.paces.ready_at(now);
        if ready > now {
            // Never past a fragmented message's deadline, which the caller then enforces.
            let wake = match &self.partial {
                Some(p) => ready.min(p.deadline),
                None => ready,
            };
            tokio::time::sleep_until(wake).await;
        }
    }

    /// Waits until the allowance, if any, admits `claim` bytes for the message under way,
    /// or until a fragmented message's time is up. Cancel-safe: nothing changes until the
    /// allowance admits.
    async fn wait_for_allowance(&mut self, claim: usize) -> Result<(), ReadError> {
        let Some(allowance) = &self.allowance else {
            return Ok(());
        };
        let deadline = self.partial.as_ref().map(|p| p.deadline);
        while !allowance.admits(claim) {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(ReadError::FragmentTimeout);
            }
            tokio::time::sleep(ALLOWANCE_RETRY).await;
        }
        self.held = claim;
        Ok(())
    }

    /// Reads more bytes, enough room for a frame of `total` bytes if known.
    /// Cancel-safe: the bytes land in `self.buf` only when the read completes.
    async fn fill(&mut self, total: usize) -> Result<(), ReadError> {
        let deadline = self.partial.as_ref().map(|p| p.deadline);
        let _listening = self.liveness.as_deref().map(Liveness::listen);
        let n = if self.buf.is_empty() {
            // Between frames (most of a socket's life) it holds no buffer: the read
            // borrows the thread's, and the socket keeps only the bytes that came.
            within(deadline, scratch::read(&mut self.io, &mut self.buf)).await?
        } else {
            let want = total.max(self.buf.len() + 1);
            if self.buf.capacity() < want {
                // Grow with the bytes that arrive, not with what a header claims.
                let doubled = self.buf.capacity().saturating_mul(2).max(BUF_START);
                self.buf.reserve_exact(want.min(doubled) - self.buf.len());
            }
            within(deadline, self.io.read_buf(&mut self.buf)).await?
        };
        if n == 0 {
            return Err(ReadError::Closed);
        }
        if let (Some(allowance), true) = (&self.allowance, self.held > 0) {
            allowance.arrived(n);
        }
        Ok(())
    }

    /// Drops the first `total` bytes; frees the buffer once every byte is taken,
    /// and shrinks it back after a big frame.
    fn consume(&mut self, total: usize) {
        self.buf.drain(..total);
        if self.buf.is_empty() {
            self.buf = Vec::new();
        } else if self.buf.capacity() > BUF_START && self.buf.len() <= BUF_START {
            self.buf.shrink_to(BUF_START);
        }
    }
}

impl<R> Drop for Reader<R> {
    fn drop(&mut self) {
        if let (Some(allowance), true) = (&self.allowance, self.held > 0) {
            allowance.release(self.held);
        }
    }
}

/// A read that must end by the fragment deadline, if one runs.
async fn within(
    deadline: Option<Instant>,
    read: impl std::future::Future<Output = std::io::Result<usize>>,
) -> Result<usize, ReadError> {
    match deadline {
        Some(deadline) if Instant::now() >= deadline => Err(ReadError::FragmentTimeout),
        Some(deadline) => Ok(timeout_at(deadline, read)
            .await
            .map_err(|_| ReadError::FragmentTimeout)??),
        None => Ok(read.await?),
    }
}

#[cfg(test)]
mod tests;
