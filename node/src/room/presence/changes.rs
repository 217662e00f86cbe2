//! People arriving, leaving and changing their presence on the board.

use std::time::Instant;

use crate::ids::PersonId;
use crate::outbox::{ConnId, Outbox};
use crate::protocol::PresenceUpdate;

use super::seat::{Credit, Seat};
use super::Board;

impl Board {
    /// Seats a person; `page` carries over from a socket it replaces.
    pub fn join(
        &mut self,
        conn: ConnId,
        outbox: Outbox,
        person: PersonId,
        page: Option<String>,
        now: Instant,
    ) {
        let address = outbox.address();
        let mut seat = Seat {
            outbox,
            person,
            page,
            cursor: None,
            sel: None,
            camera: None,
            t: None,
            changed: 0,
            page_changed: 0,
            watermark: self.counter,
            catch_up: Vec::new(),
            address,
            full: String::new(),
            short: String::new(),
            deferred: None,
        };
        seat.catch_up = self.on_page(seat.page.as_deref(), conn);
        self.seats.insert(conn, seat);
        self.bump(conn, true, now);
    }

    /// Removes a seat; `announce` false when the same person carries on elsewhere.
    pub fn leave(&mut self, conn: ConnId, announce: bool, now: Instant) -> Option<Option<String>> {
        let seat = self.seats.remove(&conn)?;
        self.changes.remove(&seat.changed);
        if announce {
            self.leaving.push(seat.person);
            self.leaving_since.get_or_insert(now);
            self.dirty = true;
        }
        Some(seat.page)
    }
}

impl Board {
    /// Applies a person's update; fields left out keep their values.
    pub fn update(&mut self, conn: ConnId, update: PresenceUpdate, now: Instant) {
        let Some(seat) = self.seats.get_mut(&conn) else {
            return;
        };
        let mut page_moved = false;
        if let Some(page) = update.page {
            page_moved = page != seat.page;
            seat.page = page;
        }
        if let Some(cursor) = update.cursor {
            seat.cursor = cursor;
        }
        if let Some(sel) = update.sel {
            seat.sel = sel;
        }
        if let Some(camera) = update.camera {
            seat.camera = camera;
        }
        if update.t.is_some() {
            seat.t = update.t;
        }
        let credit = self.relay_credits.entry(seat.address);
        credit
            .or_insert_with(|| Credit::new(now))
            .earn(update.wire_bytes, now);
        if page_moved {
            let page = seat.page.clone();
            let catch_up = self.on_page(page.as_deref(), conn);
            if let Some(seat) = self.seats.get_mut(&conn) {
                seat.catch_up = catch_up;
            }
        }
        self.bump(conn, page_moved, now);
    }
}
