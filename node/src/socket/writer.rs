//! The writing half of a socket: drains the outbox in batches (one write per
//! batch), sends pings, and sends the close frame when one is asked for.

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

fn wire(out: Out, deflate: bool) -> Bytes {
    match out {
        Out::Message(m) => m.frame(deflate),
        Out::Control(b) => b,
    }
}

/// Writes `frames` with as few writes as it can.
async fn write_all(
    io: &mut WriteIo,
    frames: Vec<Bytes>,
    gather: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let total: usize = frames.iter().map(Bytes::len).sum();
    if frames.len() == 1 || total > GATHER {
        for f in &frames {
            io.write_all(f).await?;
        }
    } else {
        gather.clear();
        gather.reserve_exact(total);
        for f in &frames {
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
    // Grows to the most items a socket gets at once, not to `BATCH`.
    let mut batch = Vec::new();
    let mut gather = Vec::new();
    let mut next_ping = Instant::now() + jittered(ping_every);
    loop {
        tokio::select! {
            biased;
            req = close.closed() => {
                let mut frames: Vec<Bytes> = Vec::new();
                // After an overflow the queue is what went wrong: drop it.
                if req.code != CloseCode::TooSlow.code() {
                    frames.extend(rx.drain_now().into_iter().map(|o| wire(o, deflate)));
                }
                frames.push(frame::close(req.code, &req.reason));
                let _ = timeout(CLOSE_DEADLINE, write_all(io, frames, &mut gather)).await;
                return;
            }
            _ = tokio::time::sleep_until(next_ping) => {
                next_ping = Instant::now() + jittered(ping_every);
                let ping = timeout(CLOSE_DEADLINE, write_all(io, vec![frame::ping(&[])], &mut gather)).await;
                if !matches!(ping, Ok(Ok(_))) {
                    return;
                }
            }
            n = rx.recv_many(&mut batch, BATCH) => {
                if n == 0 {
                    return;
                }
                let frames: Vec<Bytes> = batch.drain(..).map(|o| wire(o, deflate)).collect();
                // A peer that stops reading blocks the write; a close request (its
                // queue overflowing, say) ends the wait.
                tokio::select! {
                    written = write_all(io, frames, &mut gather) => match written {
                        Ok(bytes) => metrics.bytes_sent.inc_by(bytes as u64),
                        Err(_) => return,
                    },
                    _ = close.closed() => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
