//! Presence on its way into a room: readers leave each person's latest update here, and the
//! room takes them all at its presence tick. A room woken for every cursor move (twenty a
//! second a person) spent its time on wake-ups; now it is woken once per tick at most, by the
//! first update since it last took them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::outbox::ConnId;
use crate::protocol::PresenceUpdate;

/// Entries an inbox keeps room for between ticks.
const KEPT: usize = 64;

/// The updates waiting for a room's next tick: at most one per socket (a later update is
/// folded into the one waiting), so what waits is bounded by the people in the room.
#[derive(Default)]
pub struct PresenceInbox {
    waiting: Mutex<HashMap<ConnId, PresenceUpdate>>,
    /// The room was told that updates wait and has not taken them since.
    told: AtomicBool,
}

impl PresenceInbox {
    /// Leaves `update` for the room; true when the room must be told (the first update
    /// since it last took them).
    pub fn put(&self, conn: ConnId, update: PresenceUpdate) -> bool {
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            match waiting.get_mut(&conn) {
                Some(earlier) => fold(earlier, update),
                None => {
                    waiting.insert(conn, update);
                }
            }
        }
        !self.told.swap(true, Ordering::AcqRel)
    }

    /// Whether updates wait that the room was told of.
    pub fn told(&self) -> bool {
        self.told.load(Ordering::Acquire)
    }

    /// Takes the update waiting from `conn`, if any.
    pub fn take_for(&self, conn: ConnId) -> Option<PresenceUpdate> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.remove(&conn)
    }

    /// Takes every waiting update into `into`. The mark is cleared first: an update left
    /// after it tells the room again, one left before it is taken now.
    pub fn take(&self, into: &mut Vec<(ConnId, PresenceUpdate)>) {
        self.told.store(false, Ordering::Release);
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        into.extend(waiting.drain());
        // A room that once held a crowd does not keep its inbox's size.
        waiting.shrink_to(KEPT);
    }
}

/// `later` applied over `earlier`: the fields it sets replace theirs, and the bytes both
/// took on the wire add up (what the sender paid bounds what is relayed for it).
fn fold(earlier: &mut PresenceUpdate, later: PresenceUpdate) {
    let PresenceUpdate {
        page,
        cursor,
        sel,
        camera,
        t,
        wire_bytes,
    } = later;
    if page.is_some() {
        earlier.page = page;
    }
    if cursor.is_some() {
        earlier.cursor = cursor;
    }
    if sel.is_some() {
        earlier.sel = sel;
    }
    if camera.is_some() {
        earlier.camera = camera;
    }
    if t.is_some() {
        earlier.t = t;
    }
    earlier.wire_bytes = earlier.wire_bytes.saturating_add(wire_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(x: f64) -> PresenceUpdate {
        PresenceUpdate {
            cursor: Some(Some([x, 0.0])),
            wire_bytes: 10,
            ..PresenceUpdate::default()
        }
    }

    #[test]
    fn the_room_is_told_once_until_it_takes_them_and_later_updates_fold_in() {
        let inbox = PresenceInbox::default();
        let (a, b) = (ConnId(1), ConnId(2));
        assert!(inbox.put(a, cursor(1.0)), "the first tells the room");
        let page = PresenceUpdate {
            page: Some(Some("p2".into())),
            wire_bytes: 5,
            ..PresenceUpdate::default()
        };
        assert!(!inbox.put(a, page));
        assert!(!inbox.put(a, cursor(3.0)));
        assert!(!inbox.put(b, cursor(7.0)));
        assert!(inbox.told());
        let mut taken = Vec::new();
        inbox.take(&mut taken);
        taken.sort_by_key(|(c, _)| c.0);
        assert_eq!(taken.len(), 2, "one update a socket");
        let (_, first) = &taken[0];
        assert_eq!(first.cursor, Some(Some([3.0, 0.0])));
        assert_eq!(first.page, Some(Some("p2".into())));
        assert_eq!(first.wire_bytes, 25);
        assert!(!inbox.told());
        assert!(
            inbox.put(b, cursor(8.0)),
            "the next after a take tells it again"
        );
    }
}
