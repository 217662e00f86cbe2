//! One node, held as its id and its props' compact JSON in one allocation.

use super::op::{check_id, Props};

/// The size limit counts each node's `"id":{...}` as at least this many
/// bytes. A node in memory costs its JSON text plus a fixed overhead (its
/// allocation's rounding and header, its slot in the ordered set), which a
/// tiny node like `"n1":{}` cannot pay for with its 7 bytes of JSON; counted
/// as 24, it stays within 4 bytes of memory per counted byte (measured in
/// `tests/doc_memory.rs`). Nodes of 24 bytes or more count as their JSON.
pub const MIN_NODE_BYTES: usize = 24;

thread_local! {
    /// Where a node's text is written before it gets its exact allocation.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Scratch space kept between nodes is capped, so one huge node does not pin
/// its size on a thread forever.
const SCRATCH_KEEP: usize = 64 * 1024;

/// One node in one allocation: a byte holding the id's length (1 to 64, so a
/// one-byte UTF-8 character), the id, then the node's props as compact JSON,
/// `{...}` with names in order, exactly as `serde_json` writes a [`Props`].
/// Entries compare by id alone, so the set is searched with a `&str`.
#[derive(Clone)]
pub(super) struct Entry(pub(super) Box<str>);

impl Entry {
    pub(super) fn new(id: &str, props: &Props) -> Entry {
        Entry::build(id, |out| {
            serde_json::to_writer(out, props).expect("JSON values always serialize")
        })
    }

    /// Writes the id, lets `props` write the props' JSON, and allocates the
    /// result once, at its exact size.
    pub(super) fn build(id: &str, props: impl FnOnce(&mut Vec<u8>)) -> Entry {
        debug_assert!(check_id(id).is_ok());
        SCRATCH.with_borrow_mut(|out| {
            out.clear();
            out.push(id.len() as u8);
            out.extend_from_slice(id.as_bytes());
            props(out);
            let text = std::str::from_utf8(out).expect("ids and serde_json output are UTF-8");
            let entry = Entry(text.into());
            if out.capacity() > SCRATCH_KEEP {
                *out = Vec::new();
            }
            entry
        })
    }

    pub(super) fn split(&self) -> (&str, &str) {
        let n = usize::from(self.0.as_bytes()[0]);
        (&self.0[1..=n], &self.0[n + 1..])
    }

    pub(super) fn id(&self) -> &str {
        self.split().0
    }

    /// The props' compact JSON, `{...}`.
    pub(super) fn props_json(&self) -> &str {
        self.split().1
    }

    pub(super) fn props(&self) -> Props {
        serde_json::from_str(self.props_json()).expect("stored props are valid JSON")
    }

    /// Length of `"id":{...}` in the document's JSON: the text without the
    /// length byte, plus two quotes and a colon (ids need no escaping).
    pub(super) fn json_len(&self) -> usize {
        self.0.len() + 2
    }

    /// What the size limit adds to this node's JSON length.
    pub(super) fn shortfall(&self) -> usize {
        MIN_NODE_BYTES.saturating_sub(self.json_len())
    }
}

impl std::borrow::Borrow<str> for Entry {
    fn borrow(&self) -> &str {
        self.id()
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.id().cmp(other.id())
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (id, props) = self.split();
        write!(f, "{id}:{props}")
    }
}
