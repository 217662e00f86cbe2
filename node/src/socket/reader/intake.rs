//! What a socket may have read and not yet handled, and how fast it may read.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_protocol::CloseCode;

use super::Session;
use crate::limits::{Bucket, KeyedLimiter};
use crate::protocol;
use crate::protocol::Refusal;

/// A message waiting for the socket's message rate. It is kept as the text that
/// came (parsed only when its turn comes), or, when it is already refused (a
/// viewer's patch, a malformed message), as the small refusal alone.
pub(super) enum Waiting {
    Text(String),
    Refused(Refusal),
}

/// What a socket may have read and not yet handled, and how fast it may read.
///
/// Everything a socket makes the node hold is bounded here: messages over the
/// rate wait in order (one 429 notice), up to five seconds' worth (then 4013) and
/// at most `ATRIUM_WS_BACKLOG_BYTES` of text. At that bound, and while the socket
/// is over its byte rate (`ATRIUM_WS_BYTES_PER_SECOND`) or its address is over the
/// address's (`ATRIUM_WS_BYTES_PER_IP_PER_SECOND`), the node stops reading it: the rest
/// waits in the client's own buffers, costing the node nothing.
pub(super) struct Intake {
    pub(super) messages: Bucket,
    bytes: Bucket,
    /// Boxed: most sockets never charge it, and every socket's task carries this
    /// (`socket::tests::a_socket_task_stays_small`).
    address: Option<Box<AddressPace>>,
    pub(super) presence: Bucket,
    /// Broadcast events: over this rate they are dropped, as presence is.
    pub(super) events: Bucket,
    pub(super) backlog: VecDeque<Waiting>,
    backlog_bytes: usize,
    /// Messages that may wait (a u32, so it packs beside `told`: see `address`).
    max_backlog: u32,
    max_backlog_bytes: usize,
    told: bool,
}

impl Intake {
    pub(super) fn new(session: &Session) -> Self {
        let config = &session.state.config;
        let now = Instant::now();
        let rate = f64::from(config.ws_per_second.max(1));
        let presence_rate = f64::from(config.presence_per_second);
        let byte_rate = config.ws_bytes_per_second.max(1) as f64;
        let byte_burst = byte_rate.max(config.max_message_bytes as f64);
        Self {
            messages: Bucket::new(rate, rate, now),
            bytes: Bucket::new(byte_rate, byte_burst, now),
            address: session
                .state
                .socket_bytes_by_address
                .clone()
                .zip(session.outbox.address())
                .map(|(shared, address)| {
                    Box::new(AddressPace {
                        address,
                        shared,
                        unreported: 0,
                        until: None,
                    })
                }),
            presence: Bucket::new(presence_rate, presence_rate, now),
            events: Bucket::new(
                f64::from(config.events_per_second),
                f64::from(config.events_per_second),
                now,
            ),
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            max_backlog: 5u32.saturating_mul(config.ws_per_second.max(1)),
            max_backlog_bytes: config.ws_backlog_bytes.max(1),
            told: false,
        }
    }

    /// How long before the socket may be read again (zero: now).
    pub(super) fn read_pause(&self, now: Instant) -> Option<Duration> {
        if self.backlog_bytes >= self.max_backlog_bytes {
            return Some(self.messages.wait(now));
        }
        let address = self
            .address
            .as_ref()
            .and_then(|a| a.until)
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
        let debt = self.bytes.debt(now).max(address);
        (!debt.is_zero()).then_some(debt)
    }

    /// Counts a message's `bytes` against the socket's byte rate and its address's.
    pub(super) fn charge(&mut self, bytes: usize) {
        let now = Instant::now();
        self.bytes.charge(now, bytes as f64);
        if let Some(address) = &mut self.address {
            address.charge(bytes, now);
        }
    }

    pub(super) fn push(&mut self, waiting: Waiting) {
        if let Waiting::Text(text) = &waiting {
            self.backlog_bytes += text.len();
        }
        self.backlog.push_back(waiting);
    }

    /// The next waiting message the rate lets through.
    pub(super) fn pop(&mut self, now: std::time::Instant) -> Option<Waiting> {
        if self.backlog.is_empty() || !self.messages.take(now) {
            return None;
        }
        let waiting = self.backlog.pop_front()?;
        if let Waiting::Text(text) = &waiting {
            self.backlog_bytes -= text.len();
        }
        Some(waiting)
    }

    /// Tells the socket once that its messages wait (429), and closes it (4013)
    /// once more than five seconds' worth wait.
    pub(super) fn check_backlog(&mut self, session: &Session) {
        if self.backlog.is_empty() {
            self.told = false;
        } else if self.backlog.len() > self.max_backlog as usize {
            session.outbox.close(
                CloseCode::Flooding,
                "flooding: more than five seconds of messages waiting",
            );
            self.backlog.clear();
            self.backlog_bytes = 0;
        } else if !self.told {
            self.told = true;
            session.state.metrics.rate_limited.inc();
            session.outbox.send_text(protocol::notice(
                429,
                "too many messages: they wait in order and are handled at the allowed rate",
            ));
        }
    }
}

/// The socket's part in its address's byte rate. What it reads is charged to the address
/// in steps of at least [`ADDRESS_STEP`] (one lock per step, not per presence update);
/// once the address owes, the socket reads nothing more until the debt is paid. Each of
/// an address's sockets may read one message past the moment the address ran out, so
/// what an address brings in stays within its rate, its burst, and one message a socket.
struct AddressPace {
    address: IpAddr,
    shared: Arc<KeyedLimiter<IpAddr>>,
    unreported: usize,
    /// When the address's debt, as last learned, is paid.
    until: Option<Instant>,
}

/// Bytes a socket reads before it charges its address.
const ADDRESS_STEP: usize = 16 * 1024;

impl AddressPace {
    fn charge(&mut self, bytes: usize, now: Instant) {
        self.unreported += bytes;
        if self.unreported < ADDRESS_STEP {
            return;
        }
        self.shared
            .charge(&self.address, std::mem::take(&mut self.unreported) as u64);
        self.until = self
            .shared
            .ready(&self.address)
            .err()
            .map(|wait| now + wait);
    }
}
