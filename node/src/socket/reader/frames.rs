//! Frames as the reader sees them: text to handle, control frames answered on
//! the way, and the end of reading.

use atrium_protocol::CloseCode;

use super::{Frames, Session};
use crate::outbox::Outbox;
use crate::ws::{Incoming, ReadError};

/// What the reader does with the next frame.
pub(super) enum Next {
    Text(String),
    /// Nothing to handle (a ping, a pong).
    Skip,
    /// The socket is done reading.
    End,
}

/// Reads the next frame, answering pings and protocol errors on the way.
pub(super) async fn next_frame(frames: &mut Frames, session: &Session) -> Next {
    let outbox = &session.outbox;
    let next = frames.next().await;
    match next {
        Ok(Incoming::Text(text)) => {
            session
                .state
                .metrics
                .bytes_received
                .inc_by(text.len() as u64);
            Next::Text(text)
        }
        Ok(Incoming::Binary) => {
            outbox.close(CloseCode::Unsupported, "binary frames are not accepted");
            Next::End
        }
        Ok(Incoming::Ping(payload)) => {
            outbox.send_control(crate::ws::frame::pong(&payload));
            Next::Skip
        }
        Ok(Incoming::Pong) => {
            outbox.ack_now();
            Next::Skip
        }
        Ok(Incoming::Close(code)) => {
            // Answer with the client's code (1000 when it gave none).
            outbox.echo_close(code.unwrap_or(CloseCode::Normal.code()));
            Next::End
        }
        Err(ReadError::Closed | ReadError::Io(_)) => Next::End,
        Err(e) => {
            if let Some(code) = e.close_code() {
                outbox.close(code, &e.to_string());
            }
            Next::End
        }
    }
}

/// Reads until the client's close (or the connection's end) while our close
/// frame is on its way.
pub(super) async fn drain(frames: &mut Frames) {
    while let Ok(incoming) = frames.next().await {
        if matches!(incoming, Incoming::Close(_)) {
            break;
        }
    }
}

/// Completes once the node starts shutting down.
pub(super) async fn stopped(mut stopping: tokio::sync::watch::Receiver<bool>) {
    loop {
        if *stopping.borrow_and_update() {
            return;
        }
        if stopping.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

pub(super) async fn drain_if_closing(frames: &mut Frames, outbox: &Outbox) {
    if outbox.is_closing() {
        drain(frames).await;
    }
}
