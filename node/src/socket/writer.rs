//! The writing half of a socket: drains the outbox in batches (one write per
//! batch), sends pings, and sends the close frame when one is asked for. Senders
//! write to the socket themselves while this has nothing to do (outbox/direct.rs).

use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::time::{timeout, Instant};

use super::{WriteIo, CLOSE_DEADLINE};
use atrium_protocol::CloseCode;

use crate::outbox::{Out, OutboxReceiver};
use crate::ws::frame;

/// Items written per batch.
const BATCH: usize = 64;
/// Batches up to this size are gathered into one buffer for one write.
const GATHER: usize = 64 * 1024;
/// The gathering buffer a socket keeps between writes; one grown past it for a
/// large batch is freed once written, so a quiet socket holds no more than this.
const GATHER_KEEP: usize = 2 * 1024;

/// A ping interval drawn at random within ±25% of `every`, so a crowd that
/// connected together does not ping together.
fn jittered(every: Duration) -> Duration {
    let quarter = every / 4;
    every - quarter + quarter.mul_f64(2.0 * rand::random::<f64>())
}

/// Adds `out`'s frame to `frames` (in pieces, for a spliced message).
fn wire(out: Out, deflate: bool, frames: &mut Vec<Bytes>) {
    match out {
        Out::Message(m) => frames.push(m.frame(deflate)),
        Out::Spliced(s) => frames.extend(s.frames(deflate)),
        Out::Control(b) => frames.push(b),
    }
}

/// [`wire`], but plain where compressing is still to be done: on the way to a close, a
/// worker does not stop to compress megabytes (a plain frame is valid on any socket).
fn wire_ready(out: Out, deflate: bool, frames: &mut Vec<Bytes>) {
    let ready = match &out {
        Out::Message(m) => m.frame_if_ready(deflate).is_some(),
        Out::Spliced(s) => s.is_ready(deflate),
        Out::Control(_) => true,
    };
    wire(out, deflate && ready, frames);
}

/// [`wire`], with a large message's compression worked out on the bulk lane rather than on
/// this worker: deflating a welcome that carries a document of megabytes takes a worker's
/// milliseconds per megabyte, and every socket and room sharing the worker waited for it
/// (the eleventh review). The first socket to want it compresses it; the others take it ready
/// (a spliced welcome's own head is compressed for each socket, on the lane when large).
/// The lane's futures are boxed: rare, and every socket's task would otherwise be sized
/// for them.
async fn framed(
    out: Out,
    deflate: bool,
    metrics: &crate::metrics::Metrics,
    frames: &mut Vec<Bytes>,
) {
    let inline = crate::lane::INLINE_BYTES;
    match out {
        Out::Message(m) if deflate && m.payload_len() > inline => {
            let frame = match m.frame_if_ready(true) {
                Some(ready) => ready,
                None => {
                    Box::pin(crate::lane::run(m.payload_len(), metrics, move || {
                        m.frame(true)
                    }))
                    .await
                }
            };
            frames.push(frame);
        }
        Out::Spliced(s) if deflate && (!s.is_ready(true) || s.own_len() > inline) => {
            let work = if s.is_ready(true) {
                s.own_len()
            } else {
                s.payload_len()
            };
            let lane = Box::pin(crate::lane::run(work, metrics, move || s.frames(true)));
            frames.extend(lane.await);
        }
        other => wire(other, deflate, frames),
    }
}

/// Writes `frames` with as few writes as it can.
async fn write_all(
    io: &mut WriteIo,
    frames: &[Bytes],
    gather: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let total: usize = frames.iter().map(Bytes::len).sum();
    if frames.len() == 1 || total > GATHER {
        for f in frames {
            io.write_all(f).await?;
        }
    } else {
        gather.clear();
        gather.reserve_exact(total);
        for f in frames {
            gather.extend_from_slice(f);
        }
        io.write_all(gather).await?;
        if gather.capacity() > GATHER_KEEP {
            *gather = Vec::new();
        }
    }
    io.flush().await?;
    Ok(total)
}

pub async fn write(
    io: &mut WriteIo,
    rx: &mut OutboxReceiver,
    deflate: bool,
    ping_every: Duration,
    metrics: &crate::metrics::Metrics,
) {
    let close = rx.close.clone();
    // Made once for the socket's life: a future per turn of the loop would put a
    // waiter on the close signal's list and a timer in the wheel for every batch.
    let closed = close.closed();
    let ping = tokio::time::sleep(jittered(ping_every));
    tokio::pin!(closed, ping);
    // Grow to the most items a socket gets at once, not to `BATCH`.
    let mut batch = Vec::new();
    let mut frames: Vec<Bytes> = Vec::new();
    let mut gather = Vec::new();
    // The close request, and whether it cut a write short.
    let (req, cut) = loop {
        tokio::select! {
            biased;
            req = &mut closed => break (req, false),
            _ = &mut ping => {
                ping.as_mut().reset(Instant::now() + jittered(ping_every));
                rx.claim();
                let ping = timeout(CLOSE_DEADLINE, write_all(io, &[frame::ping(&[])], &mut gather)).await;
                if !matches!(ping, Ok(Ok(_))) {
                    return;
                }
                rx.done_writing();
            }
            n = rx.recv_many(&mut batch, BATCH) => {
                if n == 0 {
                    return;
                }
                for out in batch.drain(..) {
                    framed(out, deflate, metrics, &mut frames).await;
                }
                // A peer that stops reading blocks the write; a close request (its
                // queue overflowing, say) ends the wait.
                let written = tokio::select! {
                    written = write_all(io, &frames, &mut gather) => written,
                    req = &mut closed => break (req, true),
                };
                frames.clear();
                match written {
                    Ok(bytes) => metrics.bytes_sent.inc_by(bytes as u64),
                    Err(e) => {
                        if e.kind() == std::io::ErrorKind::TimedOut {
                            // It took nothing for the ping timeout: too slow, as an
                            // overflow is, though no close frame can reach it.
                            metrics
                                .closes
                                .with_label_values(&[&CloseCode::TooSlow.to_string()])
                                .inc();
                        }
                        return;
                    }
                }
                rx.done_writing();
            }
        }
    };
    // The socket is the writer's alone from here.
    rx.detach();
    // After an overflow the queue is what went wrong: drop it. After a write cut
    // short (a peer that stopped reading), so is the rest.
    frames.clear();
    if req.code != CloseCode::TooSlow.code() && !cut {
        for out in rx.drain_now() {
            wire_ready(out, deflate, &mut frames);
        }
    }
    frames.push(frame::close(req.code, &req.reason));
    let _ = timeout(CLOSE_DEADLINE, write_all(io, &frames, &mut gather)).await;
}

#[cfg(test)]
mod tests;
