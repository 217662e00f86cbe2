//! The rooms open on the fleet: each node reports its own rooms and their sizes to the
//! coordinator every `ATRIUM_ROOM_REPORT_MS`, and `GET /api/server/rooms` reads the live
//! members' reports from there, so no query ever goes to every node.
//!
//! A report is JSON, `{"open": N, "rooms": [["file", people], ...]}`, the fullest rooms
//! first, cut to fit [`MAX_ROOM_REPORT`] (`open` says how many the node has in all).

use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_coordinator::{NodeId, MAX_ROOM_REPORT};
use serde::{Deserialize, Serialize};

use crate::ids::FileId;
use crate::state::AppState;

#[derive(Serialize, Deserialize, PartialEq, Debug, Default)]
pub struct RoomReport {
    /// Rooms the node has in memory, listed or not.
    pub open: usize,
    /// (file, people), fullest first.
    pub rooms: Vec<(String, usize)>,
}

/// The report of these rooms, cut to `max_bytes`.
pub fn report_of(mut sizes: Vec<(FileId, usize)>, max_bytes: usize) -> Vec<u8> {
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.as_str().cmp(b.0.as_str())));
    let open = sizes.len();
    // The frame, then each entry's worst case: quotes, comma, brackets, a number.
    let mut budget = max_bytes.saturating_sub(64);
    let mut rooms = Vec::new();
    for (f, n) in sizes {
        let cost = f.as_str().len() + 26;
        if cost > budget {
            break;
        }
        budget -= cost;
        rooms.push((f.as_str().to_owned(), n));
    }
    serde_json::to_vec(&RoomReport { open, rooms }).unwrap_or_default()
}

/// An unchanged report is written again this often (Redis keeps a report a minute).
const REWRITE_UNCHANGED: Duration = Duration::from_secs(20);

/// Reports this node's rooms until the node stops: every `ATRIUM_ROOM_REPORT_MS` when they
/// changed, else every [`REWRITE_UNCHANGED`].
pub async fn run(state: Arc<AppState>) {
    let every = Duration::from_millis(state.config.room_report_ms.max(100));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = state.stopping.clone();
    let mut last: Option<(Vec<u8>, Instant)> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopping.changed() => return,
        }
        let report = report_of(state.rooms.sizes(), MAX_ROOM_REPORT);
        let fresh = last
            .as_ref()
            .is_some_and(|(r, at)| *r == report && at.elapsed() < REWRITE_UNCHANGED);
        if fresh {
            continue;
        }
        match state
            .coordinator
            .report_rooms(&state.node, report.clone())
            .await
        {
            Ok(()) => last = Some((report, Instant::now())),
            Err(e) => tracing::debug!(error = %e, "could not report rooms"),
        }
    }
}

/// The fleet's open rooms as (file, node, people), in file id order, and whether some
/// node had more rooms than its report could list.
pub async fn fleet_rooms(
    state: &AppState,
) -> Result<(Vec<(String, NodeId, usize)>, bool), atrium_coordinator::CoordinatorError> {
    let mut all = Vec::new();
    let mut cut = false;
    for (node, bytes) in state.coordinator.room_reports().await? {
        let Ok(r) = serde_json::from_slice::<RoomReport>(&bytes) else {
            continue;
        };
        cut |= r.rooms.len() < r.open;
        all.extend(r.rooms.into_iter().map(|(f, n)| (f, node.clone(), n)));
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    // A file that just moved may sit in two reports for a moment: keep the fuller entry.
    all.dedup_by(|b, a| {
        if a.0 == b.0 {
            if b.2 > a.2 {
                std::mem::swap(a, b);
            }
            true
        } else {
            false
        }
    });
    Ok((all, cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> FileId {
        FileId::parse(s).unwrap()
    }

    #[test]
    fn a_report_lists_the_fullest_rooms_first_within_its_bound() {
        let sizes = vec![(id("a"), 1), (id("b"), 9), (id("c"), 5)];
        let r: RoomReport = serde_json::from_slice(&report_of(sizes.clone(), 1024)).unwrap();
        assert_eq!(r.open, 3);
        assert_eq!(r.rooms, [("b".into(), 9), ("c".into(), 5), ("a".into(), 1)]);
        let small = report_of(sizes, 64 + 2 * 27);
        assert!(small.len() <= 64 + 2 * 27);
        let r: RoomReport = serde_json::from_slice(&small).unwrap();
        assert_eq!((r.open, r.rooms.len()), (3, 2));
    }

    #[test]
    fn the_largest_report_fits_its_bound() {
        let sizes: Vec<_> = (0..20_000)
            .map(|i| (id(&format!("{i:0>64}")), usize::MAX))
            .collect();
        let bytes = report_of(sizes, MAX_ROOM_REPORT);
        assert!(bytes.len() <= MAX_ROOM_REPORT, "{}", bytes.len());
    }
}
