//! Whole-document answers (a file's document, a version's), shared while any client still
//! holds one. An answer is held, with its bytes promised from the budget, until its client
//! has read it all; clients that ask and never read each held a copy, so a few dozen unread
//! downloads of a 24 MB file kept the node refusing new files and sockets for 30 s at a
//! resident size far under its budget (the tenth review). The same document at the same
//! version is now one copy and one promise, however many hold it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::Reservation;
use crate::ids::FileId;
use crate::room::shares::{OverShare, RoomShare};

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
    /// Its part of the file owner's share of answers: one copy, counted once.
    _account: Option<RoomShare>,
    /// Each address that holds it, how many times, and its part of that address's share:
    /// an address that is done gives its part back though others still hold the copy (so
    /// strangers asking for a version someone read cannot keep that reader's share held).
    readers: Mutex<HashMap<IpAddr, (usize, RoomShare)>>,
}

impl HeldBody {
    pub fn new(body: Vec<u8>, held: Option<Reservation>, account: Option<RoomShare>) -> Arc<Self> {
        Arc::new(Self {
            body,
            _held: held,
            _account: account,
            readers: Mutex::default(),
        })
    }

    /// One more holder of this answer at `address`; an address not holding it yet first
    /// takes its part of its share (`take`), or is refused.
    pub fn hold(
        self: &Arc<Self>,
        address: IpAddr,
        take: impl FnOnce() -> Result<RoomShare, OverShare>,
    ) -> Result<Holder, OverShare> {
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        match readers.get_mut(&address) {
            Some((n, _)) => *n += 1,
            None => {
                readers.insert(address, (1, take()?));
            }
        }
        Ok(Holder {
            body: self.clone(),
            address,
        })
    }
}

/// One holder of a [`HeldBody`], as the bytes of an HTTP body.
pub struct Holder {
    body: Arc<HeldBody>,
    address: IpAddr,
}

impl AsRef<[u8]> for Holder {
    fn as_ref(&self) -> &[u8] {
        &self.body.body
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let mut readers = self
            .body
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((n, _)) = readers.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                readers.remove(&self.address);
            }
        }
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

    #[test]
    fn each_address_holds_its_part_until_it_is_done() {
        let shares = crate::room::shares::RoomShares::new(100);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let body = HeldBody::new(vec![0; 60], None, None);
        let first = body
            .hold(a, || shares.take_address(a, 60))
            .expect("a's part");
        let again = body
            .hold(a, || panic!("an address holding it takes no second part"))
            .expect("a again");
        let other = body
            .hold(b, || shares.take_address(b, 60))
            .expect("b's part");
        assert!(
            shares.take_address(a, 60).is_err(),
            "a's share holds the copy"
        );
        drop((first, again));
        // b still holds the copy; a's part came back all the same.
        let a_again = shares.take_address(a, 60).expect("a is done with it");
        drop((a_again, other));
    }
}
