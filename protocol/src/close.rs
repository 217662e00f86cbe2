//! Close codes: the numbers on the wire, the meanings the contract gives them, and what a
//! client should do on each (the table in `docs/protocol.md`).

use std::fmt;

/// A close code the node or router sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum CloseCode {
    /// Normal closure.
    Normal = 1000,
    /// The peer stopped answering pings.
    GoingAway = 1001,
    /// A frame that breaks the WebSocket protocol.
    ProtocolError = 1002,
    /// A binary frame.
    Unsupported = 1003,
    /// Invalid UTF-8.
    InvalidText = 1007,
    /// A message left half-sent too long.
    PolicyViolation = 1008,
    /// A message too big, or inflating past what its sender may cost.
    TooBig = 1009,
    /// The server is restarting or draining: reconnect after a random pause and resume.
    ServiceRestart = 1012,
    /// Try again later: the node is overloaded or cannot write.
    TryAgainLater = 1013,
    /// No hello in time, or too many messages before it.
    NoHello = 4000,
    /// Not signed in, a bad or signed-out token, or a bad key.
    Unauthorized = 4001,
    /// No access (any more).
    Forbidden = 4003,
    /// The file was not found, or was deleted.
    NotFound = 4004,
    /// Removed from the file by the app's server (a kick).
    Kicked = 4006,
    /// Too slow: the socket's send queue overflowed.
    TooSlow = 4008,
    /// Moved: this node does not own the file (any more).
    Moved = 4009,
    /// Replaced by a newer socket of the same client.
    Replaced = 4010,
    /// Flooding: more than five seconds of messages waiting.
    Flooding = 4013,
    /// Too many sockets for this account or this address.
    TooManySockets = 4029,
    /// The file has as many people as it allows.
    FileFull = 4031,
}

impl CloseCode {
    /// Every code, in numeric order.
    pub const ALL: [CloseCode; 20] = [
        CloseCode::Normal,
        CloseCode::GoingAway,
        CloseCode::ProtocolError,
        CloseCode::Unsupported,
        CloseCode::InvalidText,
        CloseCode::PolicyViolation,
        CloseCode::TooBig,
        CloseCode::ServiceRestart,
        CloseCode::TryAgainLater,
        CloseCode::NoHello,
        CloseCode::Unauthorized,
        CloseCode::Forbidden,
        CloseCode::NotFound,
        CloseCode::Kicked,
        CloseCode::TooSlow,
        CloseCode::Moved,
        CloseCode::Replaced,
        CloseCode::Flooding,
        CloseCode::TooManySockets,
        CloseCode::FileFull,
    ];

    /// The number on the wire.
    pub const fn code(self) -> u16 {
        self as u16
    }

    /// The code with this number, if the contract has one.
    pub fn from_code(code: u16) -> Option<CloseCode> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    /// Whether a client should stop rather than reconnect by itself (the contract's
    /// "stop" and "fix the client" rows, and 4029, which waits for the person).
    pub const fn is_final(self) -> bool {
        matches!(
            self,
            CloseCode::Normal
                | CloseCode::ProtocolError
                | CloseCode::Unsupported
                | CloseCode::InvalidText
                | CloseCode::TooBig
                | CloseCode::Unauthorized
                | CloseCode::Forbidden
                | CloseCode::NotFound
                | CloseCode::Kicked
                | CloseCode::Replaced
                | CloseCode::TooManySockets
        )
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

impl From<CloseCode> for u16 {
    fn from(c: CloseCode) -> u16 {
        c.code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_and_all_is_complete_and_ordered() {
        for c in CloseCode::ALL {
            assert_eq!(CloseCode::from_code(c.code()), Some(c));
        }
        assert!(CloseCode::ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(CloseCode::from_code(4999), None);
        assert_eq!(CloseCode::Moved.to_string(), "4009");
    }

    /// The contract's table lists every code, and this enum every code in the table.
    #[test]
    fn the_codes_are_the_contracts() {
        let contract = include_str!("../../docs/protocol.md");
        for c in CloseCode::ALL {
            assert!(
                contract.contains(&c.code().to_string()),
                "{c:?} ({c}) is not in docs/protocol.md"
            );
        }
    }
}
