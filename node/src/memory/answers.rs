//! Whole-document answers (a file's document, a version's), shared while any client still
//! holds one. An answer is held, with its bytes promised from the budget, until its client
//! has read it all; clients that ask and never read each held a copy, so a few dozen unread
//! downloads of a 24 MB file kept the node refusing new files and sockets for 30 s at a
//! resident size far under its budget (the tenth review). The same document at the same
//! version is now one copy and one promise, however many hold it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::Reservation;
use crate::ids::FileId;
use crate::room::shares::RoomShare;

/// Which document an answer carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AnswerKey {
    /// A file's document at a version.
    Doc(FileId, u64),
    /// A stored version of a file, by its id, with its description as answered (a rename
    /// changes it, never its document).
    Version(FileId, u64, String),
}

/// An answer's bytes and the memory promised for them, given back when the last client
/// holding them lets go (sent, or its connection closed).
pub struct HeldBody {
    body: Vec<u8>,
    _held: Option<Reservation>,
    /// Its part of the file owner's and the reader's address's shares of answers.
    _share: Option<RoomShare>,
}

impl HeldBody {
    pub fn new(body: Vec<u8>, held: Option<Reservation>, share: Option<RoomShare>) -> Arc<Self> {
        Arc::new(Self {
            body,
            _held: held,
            _share: share,
        })
    }
}

/// One holder of a [`HeldBody`], as the bytes of an HTTP body.
pub struct Holder(pub Arc<HeldBody>);

impl AsRef<[u8]> for Holder {
    fn as_ref(&self) -> &[u8] {
        &self.0.body
    }
}

/// Answers somebody still holds, by what they carry.
#[derive(Default)]
pub struct SharedAnswers {
    live: Mutex<HashMap<AnswerKey, Weak<HeldBody>>>,
}

/// Entries kept before those nobody holds any more are swept.
const SWEEP_AT: usize = 256;

impl SharedAnswers {
    /// The answer for `key` if somebody holds it now.
    pub fn get(&self, key: &AnswerKey) -> Option<Arc<HeldBody>> {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.get(key).and_then(Weak::upgrade)
    }

    /// Offers `body` to later requests for `key` while somebody holds it.
    pub fn keep(&self, key: AnswerKey, body: &Arc<HeldBody>) {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if live.len() >= SWEEP_AT {
            live.retain(|_, b| b.strong_count() > 0);
        }
        live.insert(key, Arc::downgrade(body));
    }

    /// Answers somebody holds (for tests and metrics).
    pub fn held(&self) -> usize {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.values().filter(|b| b.strong_count() > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_shared_while_held_and_forgotten_after() {
        let answers = SharedAnswers::default();
        let key = AnswerKey::Doc(FileId::parse("f1").unwrap(), 7);
        let body = HeldBody::new(b"{}".to_vec(), None, None);
        answers.keep(key.clone(), &body);
        let again = answers.get(&key).expect("held: shared");
        assert!(Arc::ptr_eq(&body, &again));
        assert!(answers
            .get(&AnswerKey::Doc(FileId::parse("f1").unwrap(), 8))
            .is_none());
        drop((body, again));
        assert!(answers.get(&key).is_none(), "nobody holds it");
        assert_eq!(answers.held(), 0);
    }
}
