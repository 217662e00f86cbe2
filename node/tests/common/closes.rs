//! What the peers' sockets were closed with, over a span of time.

use std::ops::RangeBounds;

use super::*;

/// The close codes `p` got at instants within `span`, in order.
pub fn closes_in(p: &Peer, span: impl RangeBounds<Instant>) -> Vec<u16> {
    p.closes
        .iter()
        .filter(|(t, _)| span.contains(t))
        .map(|c| c.1)
        .collect()
}
