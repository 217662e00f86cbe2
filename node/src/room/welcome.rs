//! The welcome: a joiner's first message, the whole document at a durable
//! version, with a large one reserved from the memory budget first, and a large
//! document shared by the welcomes of those who join together.

use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_protocol::CloseCode;
use serde_json::json;

use super::access::Role;
use super::core::RoomCore;
use super::{JoinError, JoinRequest};
use crate::ids::ClientKey;
use crate::outbox::{shared, ConnId, CopyFor, Out};
use crate::ws::{Kept, Middle, Spliced};

/// Welcomes up to this size are sent even to an address that owes (they are still
/// charged): a person opening a small file is not kept out because someone at their
/// address downloaded large ones, and joins are paced per address anyway.
const ALWAYS_WELCOMED: usize = 64 * 1024;

/// Welcomes from this size on are reserved from the memory budget before they are built,
/// so at its mark a node refuses them with 1013 (a document's copy only when one is made:
/// see `RoomCore::shared_welcome_doc`). Each was a copy of its own, held until its socket
/// took it: from 1 MiB only, a hundred sockets of one address that said hello to
/// an open room of 0.99 MiB and read slowly held 99 MiB past any budget (the eleventh review;
/// a hello for an open room is checked by the room, not by the socket's own budget check).
const LARGE_WELCOME: usize = ALWAYS_WELCOMED;

/// How long after it is made a welcome's document is shared with later joiners. Not for
/// as long as someone holds it: sockets of an address that never read, one new each few
/// milliseconds, would keep one copy alive for good, beyond the reach of the allowance's
/// making way (it closes holders that took nothing for 5 s, not ones just come) and of its
/// order (a welcome that shares draws nothing). Past this, a joiner's welcome draws on the
/// allowance again, in its turn, and the old copy goes once its holders are done or made
/// to make way.
const SHARED_FOR: Duration = Duration::from_millis(crate::outbox::MAKE_WAY_AFTER_MS);

impl RoomCore {
    /// The bytes a welcome will carry: the patches that resume the client from `since`
    /// when the room still holds them, else the whole document, and the people in the
    /// room. Worked out once a join
    /// (it walks the recent patches) and given to the checks below.
    pub(super) fn welcome_len(&self, since: Option<u64>, client: ClientKey) -> usize {
        let carried = self
            .resume_len(since, client)
            .unwrap_or_else(|| self.doc.serialized_len());
        carried + self.people_len()
    }

    /// The bytes of the patches that resume `client` from `since`, when the room holds
    /// them (else the welcome carries the whole document).
    fn resume_len(&self, since: Option<u64>, client: ClientKey) -> Option<usize> {
        since.and_then(|since| self.recent.resume_len(since, self.version, client))
    }

    /// The bytes of the document a welcome for `since` and `client` carries as a copy that
    /// may be shared ([`Self::shared_welcome_doc`]); 0 when it carries none.
    pub(super) fn copy_len(&self, since: Option<u64>, client: ClientKey) -> usize {
        let len = self.doc.serialized_len();
        if len < LARGE_WELCOME || self.resume_len(since, client).is_some() {
            return 0;
        }
        len
    }

    /// The document a large welcome at this version already carries, to share, when a
    /// welcome for `since` and `client` is to carry the document.
    fn welcome_doc_now(
        &self,
        since: Option<u64>,
        client: ClientKey,
        now: Instant,
    ) -> Option<Arc<Middle>> {
        let (version, made, doc) = self.welcome_doc.as_ref()?;
        let fresh = now.saturating_duration_since(*made) < SHARED_FOR;
        if *version != self.version || !fresh || self.resume_len(since, client).is_some() {
            return None;
        }
        doc.upgrade()
    }

    /// The document for a welcome to `joiner`, to share with the welcomes of everyone who
    /// joins at this version within [`SHARED_FOR`] (`None` when the welcome resumes the
    /// client instead, or the document is under 64 KiB): the one such a welcome carries
    /// already ([`Self::welcome_doc_now`]), or a new one, reserved from the node's memory
    /// budget only then ([`Self::reserve_welcome`]). One copy, encoded and
    /// compressed once, for a crowd that opens a file together: before, each welcome was a
    /// copy of its own, so sockets that never read held one each and kept others' welcomes
    /// of the same file out of the node's allowance for large messages. A copy larger than
    /// half a send queue is charged on that allowance once, in the joiner's turn (refused
    /// 1013 when it has no room), and counts against the share of each address holding it;
    /// a smaller one is counted in each socket's queue, as it was. Copies of one owner's
    /// files are charged at most a quarter of the allowance, and in that share a joiner who
    /// came by a link key (`by_link`) comes after the owner and those the app grants the
    /// file to.
    pub(super) fn shared_welcome_doc(
        &mut self,
        since: Option<u64>,
        client: ClientKey,
        joiner: &crate::outbox::Outbox,
        by_link: bool,
        now: Instant,
    ) -> Result<Option<Arc<Middle>>, JoinError> {
        let budget = &self.rules.welcome_budget;
        if let Some(doc) = self.welcome_doc_now(since, client, now) {
            if doc.is_charged() {
                if !budget.may_hold(joiner.address(), &doc) {
                    return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
                }
                budget.served(joiner.address(), &self.holder);
            }
            return Ok(Some(doc));
        }
        let len = self.copy_len(since, client);
        if len == 0 {
            return Ok(None);
        }
        let kept: Kept = if len > self.rules.config.send_queue_bytes / 2 {
            let copy_for = CopyFor {
                address: joiner.address(),
                by_link,
            };
            let Some(charge) = budget.charge(copy_for, len, &self.holder) else {
                return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
            };
            Some(Arc::new(charge))
        } else {
            None
        };
        // Refused here, the charge goes back as it is dropped.
        self.reserve_welcome(len)?;
        let doc = Middle::new(self.doc.to_json(), kept);
        self.welcome_doc = Some((self.version, now, Arc::downgrade(&doc)));
        Ok(Some(doc))
    }

    /// The bytes of the welcome's list of people, as it will be written: in a room of
    /// hundreds with long names it is larger than most documents, and a client that
    /// resumed at the current version in a loop was sent it uncharged (the eleventh review:
    /// about 195 KB a welcome in a room of 500, for a hello of 400 bytes).
    fn people_len(&self) -> usize {
        self.participants
            .iter()
            .map(|(c, m)| m.person_json(self.board.page_of(*c)).to_string().len() + 1)
            .sum()
    }

    /// A large welcome (a document, or the patches that resume a client) is built in
    /// memory (twice, while it is spliced): promised from the node's memory budget first,
    /// or refused with 1013.
    pub(super) fn reserve_welcome(&self, size: usize) -> Result<(), JoinError> {
        if size < LARGE_WELCOME {
            return Ok(());
        }
        let Some(reservation) = self.rules.memory.reserve(2 * size as u64) else {
            self.rules.metrics.memory_refusals.inc();
            return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
        };
        reservation.hold_until_sampled();
        Ok(())
    }

    /// A welcome is charged to the joiner's address by what it carries, a document or
    /// the patches that resume it (`ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND`): while the
    /// address is in debt a hello for a welcome over [`ALWAYS_WELCOMED`] is refused with
    /// how long to wait, before anything is reserved for it, so joining again and again
    /// cannot make the node send a large document, or a long resume, faster than the
    /// address's share.
    pub(super) fn pace_welcome(&self, req: &JoinRequest, len: usize) -> Result<(), JoinError> {
        let Some(address) = req.outbox.address() else {
            return Ok(());
        };
        if len <= ALWAYS_WELCOMED {
            return Ok(());
        }
        self.rules.documents_sent.ready(&address).map_err(|wait| {
            let paced = &self.rules.metrics.documents_paced;
            paced.with_label_values(&["welcome"]).inc();
            JoinError::Paced(wait)
        })
    }

    /// Charges a welcome let in by [`Self::pace_welcome`], once nothing else refuses it:
    /// the address and what it was charged, to give back if the welcome is never sent.
    pub(super) fn charge_welcome(
        &self,
        req: &JoinRequest,
        len: usize,
    ) -> Option<(std::net::IpAddr, u64)> {
        let address = req.outbox.address()?;
        self.rules.documents_sent.charge(&address, len as u64);
        Some((address, len as u64))
    }

    /// The welcome for `conn`: around `doc` when it shares one ([`Self::shared_welcome_doc`]).
    pub(super) fn welcome(
        &self,
        conn: ConnId,
        role: Role,
        reason: Option<&str>,
        since: Option<u64>,
        client: ClientKey,
        doc: Option<Arc<Middle>>,
    ) -> Out {
        let me = &self.participants[&conn];
        let people: Vec<serde_json::Value> = self
            .participants
            .iter()
            .map(|(c, m)| m.person_json(self.board.page_of(*c)))
            .collect();
        let mut head = json!({
            "type": "welcome",
            "you": me.person.as_str(),
            "role": role.as_str(),
            "version": self.version,
            "people": people,
            "presence_hz": self.presence_hz,
        });
        if let Some(reason) = reason {
            head["reason"] = json!(reason);
        }
        // The document or the resume list is spliced in as already-encoded JSON.
        let mut out = head.to_string();
        out.pop();
        if let Some(doc) = doc {
            out.push_str(",\"doc\":");
            return Spliced::new(out.into(), doc, "}").into();
        }
        match since.and_then(|s| self.recent.resume(s, self.version, client)) {
            Some(resume) => {
                out.push_str(",\"resume\":[");
                for (i, frame) in resume.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(std::str::from_utf8(frame).unwrap_or("null"));
                }
                out.push_str("]}");
            }
            None => {
                out.push_str(",\"doc\":");
                out.push_str(&self.doc.to_json());
                out.push('}');
            }
        }
        Out::Message(shared(out))
    }
}
