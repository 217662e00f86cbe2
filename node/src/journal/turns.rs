//! Which turns commit now: small files' turns at once, large ones apart and in
//! the order they came, at most [`MAX_LARGE_BYTES`] of them at a time.

use std::collections::{HashMap, HashSet, VecDeque};

use super::JournalEntry;
use crate::ids::FileId;
use crate::store::FileAppend;

/// A file whose waiting patches come to more than this many bytes commits apart from
/// the rest, so small edits never wait for a large one's write and sync.
const SMALL_FILE_BYTES: usize = 64 * 1024;

/// Most bytes of large files' patches in one commit (at least one file's turn).
const MAX_LARGE_BYTES: usize = 1024 * 1024;

fn bytes(append: &FileAppend) -> usize {
    append.patches.iter().map(|p| p.ops.len()).sum()
}

/// Moves the turns that must wait (a large file's, or a file's with a turn already
/// waiting) behind `deferred`, and returns the ones to commit now.
pub(super) fn defer_large(
    entries: Vec<JournalEntry>,
    deferred: &mut VecDeque<JournalEntry>,
) -> Vec<JournalEntry> {
    // A file goes later when what it brought this turn is large, or when a turn of
    // it already waits (its turns never pass one another).
    let mut by_file: HashMap<&FileId, usize> = HashMap::new();
    for e in &entries {
        *by_file.entry(&e.append.file).or_default() += bytes(&e.append);
    }
    let waiting: HashSet<&FileId> = deferred.iter().map(|e| &e.append.file).collect();
    let late: Vec<bool> = entries
        .iter()
        .map(|e| by_file[&e.append.file] > SMALL_FILE_BYTES || waiting.contains(&e.append.file))
        .collect();
    let (mut now, mut later) = (Vec::new(), Vec::new());
    for (e, late) in entries.into_iter().zip(late) {
        if late {
            later.push(e)
        } else {
            now.push(e)
        }
    }
    deferred.extend(later);
    now
}

/// The next waiting large turns to commit (at least one, when any wait), at most
/// [`MAX_LARGE_BYTES`] in all.
pub(super) fn next_large_turn(deferred: &mut VecDeque<JournalEntry>) -> Vec<JournalEntry> {
    let mut turn = Vec::new();
    let mut size = 0;
    while let Some(next) = deferred.front() {
        let n = bytes(&next.append);
        if !turn.is_empty() && size + n > MAX_LARGE_BYTES {
            break;
        }
        size += n;
        turn.extend(deferred.pop_front());
    }
    turn
}
