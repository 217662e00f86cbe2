//! A WebSocket client of one file, and what it hears.

use super::*;

mod answers;
mod hello;
mod joining;
mod reading;
mod sending;
mod welcome;

pub use hello::*;
pub use welcome::*;

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What came out of a socket.
#[derive(Debug)]
pub enum Event {
    Json(Value),
    /// A close frame, with its code when it had one.
    Close(Option<u16>),
    /// The stream ended without a close frame.
    Ended,
    Error(String),
    Timeout,
}

/// Message types that the server may send at any time (presence traffic);
/// skipped by the `recv*` helpers unless asked for.
pub const PRESENCE_TYPES: &[&str] = &["presences", "join", "leave", "presence-rate", "notice"];

/// A WebSocket client of one file.
pub struct Client {
    pub ws: Ws,
}
