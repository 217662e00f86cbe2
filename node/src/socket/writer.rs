//! The writing half of a socket: drains the outbox in batches (one write per
//! batch), sends pings, and sends the close frame when one is asked for. Senders
//! write to the socket themselves while this has nothing to do (outbox/direct.rs).

use std::time::Duration;

use tokio::time::{timeout, Instant};

use super::{WriteIo, CLOSE_DEADLINE};
use atrium_protocol::CloseCode;

use crate::outbox::{Out, OutboxReceiver};
use crate::ws::frame;

use self::batch::Batch;

mod batch;

/// Items written per batch.
const BATCH: usize = 64;

/// A ping interval drawn at random within ±25% of `every`, so a crowd that
/// connected together does not ping together.
fn jittered(every: Duration) -> Duration {
    let quarter = every / 4;
    every - quarter + quarter.mul_f64(2.0 * rand::random::<f64>())
}

/// Adds `out`'s frame to `batch` (in pieces, for a spliced message).
fn wire(out: Out, deflate: bool, batch: &mut Batch) {
    match out {
        Out::Message(m) => batch.push(m.frame(deflate)),
        Out::Spliced(s) => s.frames(deflate).into_iter().for_each(|b| batch.push(b)),
        Out::Control(b) => batch.push(b),
        Out::Rest(b) => batch.push_rest(b),
    }
    batch.frame_done();
}

/// [`wire`], but plain where compressing is still to be done: on the way to a close, a
/// worker does not stop to compress megabytes (a plain frame is valid on any socket).
fn wire_ready(out: Out, deflate: bool, batch: &mut Batch) {
    let ready = match &out {
        Out::Message(m) => m.frame_if_ready(deflate).is_some(),
        Out::Spliced(s) => s.is_ready(deflate),
        Out::Control(_) | Out::Rest(_) => true,
    };
    wire(out, deflate && ready, batch);
}

/// [`wire`], with a large message's compression worked out on the bulk lane rather than on
/// this worker: deflating a welcome that carries a document of megabytes takes a worker's
/// milliseconds per megabyte, and every socket and room sharing the worker waited for it
/// (the eleventh review). The first socket to want it compresses it; the others take it ready
/// (a spliced welcome's own head is compressed for each socket, on the lane when large).
/// The lane's futures are boxed: rare, and every socket's task would otherwise be sized
/// for them.
async fn framed(out: Out, deflate: bool, metrics: &crate::metrics::Metrics, batch: &mut Batch) {
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
            batch.push_frame(frame);
        }
        Out::Spliced(s) if deflate && (!s.is_ready(true) || s.own_len() > inline) => {
            let work = if s.is_ready(true) {
                s.own_len()
            } else {
                s.payload_len()
            };
            let lane = Box::pin(crate::lane::run(work, metrics, move || s.frames(true)));
            lane.await.into_iter().for_each(|b| batch.push(b));
            batch.frame_done();
        }
        other => wire(other, deflate, batch),
    }
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
    let mut items = Vec::new();
    let mut batch = Batch::default();
    // A ping whose turn came while something was queued goes with the next batch.
    let mut ping_owed = false;
    // The close request, and whether it cut a write short.
    let (req, cut) = loop {
        tokio::select! {
            biased;
            req = &mut closed => break (req, false),
            _ = &mut ping => {
                ping.as_mut().reset(Instant::now() + jittered(ping_every));
                rx.claim();
                // What a sender queued before the claim may be the rest of a frame it
                // began: the ping must not land inside that frame.
                if rx.has_queued() {
                    ping_owed = true;
                    continue;
                }
                batch.push_frame(frame::ping(&[]));
                let ping = timeout(CLOSE_DEADLINE, batch.write(io)).await;
                metrics.bytes_sent.inc_by(batch.clear() as u64);
                if !matches!(ping, Ok(Ok(_))) {
                    return;
                }
                rx.done_writing();
            }
            n = rx.recv_many(&mut items, BATCH) => {
                if n == 0 {
                    return;
                }
                // An owed ping goes first, or right after the rest of a frame a sender
                // began (only ever first in the queue).
                if std::mem::take(&mut ping_owed) {
                    if matches!(items.first(), Some(Out::Rest(_))) {
                        wire(items.remove(0), deflate, &mut batch);
                    }
                    batch.push_frame(frame::ping(&[]));
                }
                for out in items.drain(..) {
                    framed(out, deflate, metrics, &mut batch).await;
                }
                // A peer that stops reading blocks the write; a close request (its
                // queue overflowing, say) ends the wait. The write goes first: a close
                // already asked for does not drop a batch the socket takes at once.
                let written = tokio::select! {
                    biased;
                    written = batch.write(io) => written,
                    req = &mut closed => break (req, true),
                };
                metrics.bytes_sent.inc_by(batch.clear() as u64);
                match written {
                    Ok(_) => {}
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
    // The close frame must begin where a frame ends: first the rest of the one a cut
    // write left the peer in, and of one a sender wrote part of (`Out::Rest`).
    let unfinished = batch.unfinished();
    metrics.bytes_sent.inc_by(batch.clear() as u64);
    unfinished.into_iter().for_each(|b| batch.push(b));
    batch.frame_done();
    // After an overflow the queue is what went wrong: drop it. After a write cut
    // short (a peer that stopped reading), so is the rest.
    let drop_queue = req.code == CloseCode::TooSlow.code() || cut;
    for out in rx.drain_now() {
        if drop_queue && !matches!(out, Out::Rest(_)) {
            continue;
        }
        wire_ready(out, deflate, &mut batch);
    }
    batch.push_frame(frame::close(req.code, &req.reason));
    let _ = timeout(CLOSE_DEADLINE, batch.write(io)).await;
    metrics.bytes_sent.inc_by(batch.clear() as u64);
}

#[cfg(test)]
mod tests;
