//! How a room ends: idle, shut down, moved, deleted; and what a stalled store does.

use super::*;
use atrium_protocol::CloseCode;

#[test]
fn an_empty_room_ends_idle_after_room_idle_ms() {
    let mut h = Harness::with(&[("room-idle-ms", "10000")], u64::MAX / 4);
    let a = h.join(As::Owner);
    h.leave(&a);
    h.advance(Duration::from_secs(9));
    h.housekeeping();
    assert_eq!(h.exit, None);
    h.advance(Duration::from_secs(1));
    h.housekeeping();
    assert_eq!(h.exit, Some(Exit::Idle));
}

#[test]
fn a_room_with_people_never_ends_idle() {
    let mut h = Harness::with(&[("room-idle-ms", "1000")], u64::MAX / 4);
    let _a = h.join(As::Owner);
    h.advance(Duration::from_secs(3600));
    h.housekeeping();
    assert_eq!(h.exit, None);
}

#[test]
fn an_empty_room_with_edits_not_yet_durable_stays() {
    let mut h = Harness::with(&[("room-idle-ms", "1000")], u64::MAX / 4);
    let a = h.join(As::Owner);
    h.patch(&a, 1, put("x", json!({})));
    h.end_turn();
    h.leave(&a);
    h.advance(Duration::from_secs(2));
    h.housekeeping();
    assert_eq!(h.exit, None, "version 1 is still on its way to the disk");
    h.durable(1);
    h.housekeeping();
    assert_eq!(h.exit, Some(Exit::Idle));
}

#[test]
fn a_stalled_store_brings_a_notice_after_a_second_and_closes_after_five() {
    let (mut h, mut a, b) = owner_and(As::Viewer);
    a.frames();
    h.patch(&a, 1, put("x", json!({})));
    h.end_turn();
    h.advance(Duration::from_millis(999));
    h.housekeeping();
    assert!(a.of_type("notice").is_empty());
    h.advance(Duration::from_millis(1));
    h.housekeeping();
    h.housekeeping();
    let notices = a.of_type("notice");
    assert_eq!(notices.len(), 1, "announced once");
    assert_eq!(notices[0]["code"], 503);
    // Housekeeping runs once a second.
    for _ in 0..4 {
        h.advance(Duration::from_secs(1));
        h.housekeeping();
    }
    assert_eq!(a.closed(), Some(CloseCode::TryAgainLater.code()));
    assert_eq!(b.closed(), Some(CloseCode::TryAgainLater.code()));
    assert!(a.of_type("ack").is_empty(), "never acked before durable");
    assert_eq!(
        h.appends.len(),
        1,
        "the append is still the journal's to finish"
    );
}

/// A node frozen (SIGSTOP, a paused VM) with a patch in flight wakes with its clocks far
/// ahead: the freeze is not time the store kept the patch waiting, so nobody is closed with
/// 1013 before the node learns whether it still holds the file.
#[test]
fn a_freeze_is_not_counted_as_a_store_stall() {
    let (mut h, mut a, _b) = owner_and(As::Viewer);
    a.frames();
    h.housekeeping();
    h.patch(&a, 1, put("x", json!({})));
    h.end_turn();
    h.advance(Duration::from_secs(8));
    h.housekeeping();
    assert_eq!(a.closed(), None, "closed for a stall that was a freeze");
    assert!(a.of_type("notice").is_empty());
    // Still stalled after waking: counted from the wake.
    for _ in 0..5 {
        h.advance(Duration::from_secs(1));
        h.housekeeping();
    }
    assert_eq!(a.closed(), Some(CloseCode::TryAgainLater.code()));
}

#[test]
fn a_shutdown_finishes_what_is_in_flight_then_closes_with_1012() {
    let mut h = Harness::new();
    let mut a = h.join(As::Owner);
    a.frames();
    h.patch(&a, 1, put("x", json!({})));
    h.end_turn();
    let (tx, mut rx) = oneshot::channel();
    h.send(RoomCmd::Shutdown(tx));
    assert_eq!(h.core.maybe_finish(), None, "version 1 is not durable yet");
    h.patch(&a, 2, put("y", json!({})));
    assert_eq!(h.version(), 1, "a finishing room takes no new patch");
    h.durable(1);
    assert_eq!(a.of_type("ack").len(), 1, "what was accepted is acked");
    let exit = h.core.maybe_finish().expect("finished");
    assert_eq!(exit, Exit::Shutdown);
    h.core.close_everyone(exit);
    assert_eq!(a.closed(), Some(CloseCode::ServiceRestart.code()));
    assert!(rx.try_recv().is_ok(), "the node hears the room is done");
}

#[test]
fn a_moved_room_closes_everyone_with_4009() {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    h.send(RoomCmd::Move);
    let exit = h.core.maybe_finish().expect("nothing in flight");
    assert_eq!(exit, Exit::Moved);
    h.core.close_everyone(exit);
    assert_eq!(a.closed(), Some(CloseCode::Moved.code()));
}

#[test]
fn a_deleted_file_ends_the_room_with_4004() {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    h.send(RoomCmd::Deleted);
    assert_eq!(h.exit, Some(Exit::Deleted));
    h.core.close_everyone(Exit::Deleted);
    assert_eq!(a.closed(), Some(CloseCode::NotFound.code()));
    assert_eq!(h.core.people.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[test]
fn a_room_ending_idle_closes_nobody() {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    h.core.close_everyone(Exit::Idle);
    assert_eq!(a.closed(), None);
}

#[test]
fn an_empty_room_ends_early_while_its_share_is_wanted() {
    let mut h = Harness::with(&[("room-idle-ms", "600000")], 1u64 << 30);
    let a = h.join(As::Owner);
    h.leave(&a);
    h.advance(crate::room::upkeep::PRESSED_IDLE);
    h.housekeeping();
    assert_eq!(h.exit, None, "nobody waits for the share: its idle time");
    h.housekeeping_with(true);
    assert_eq!(h.exit, Some(Exit::Idle), "a room was refused for the share");
}

#[test]
fn an_empty_room_ends_early_while_memory_is_pressed() {
    let budget = 1u64 << 30;
    let mut h = Harness::with(&[("room-idle-ms", "600000")], budget);
    let a = h.join(As::Owner);
    h.leave(&a);
    h.advance(crate::room::upkeep::PRESSED_IDLE);
    h.housekeeping();
    assert_eq!(
        h.exit, None,
        "memory is not pressed: the room keeps its idle time"
    );
    // Promised memory brings the node within an eighth of its mark.
    let memory = h.core.rules.memory.clone();
    let left = memory.room_left();
    let _promised = memory
        .reserve(left - left.min(8 << 20))
        .expect("under the mark");
    assert!(memory.pressed() && memory.admits());
    h.housekeeping();
    assert_eq!(h.exit, Some(Exit::Idle));
}
