//! Delivered updates: one patch, or one person's presence entry, that reaches a client other
//! than its sender. The unit the node's CPU is divided by (a `presences` message carrying 9
//! people is 9 updates delivered, not one message), counted where the clients read.

use std::sync::LazyLock;

use memchr::memmem::Finder;

/// An entry's `id` key. Every entry of a `presences` message has exactly one, and nothing else
/// in the message does (its values are ids, numbers and arrays of them). The pattern cannot
/// occur inside a string, where a quote is escaped, so whatever order the node writes the
/// keys in, each occurrence is one person.
const ID_KEY: &str = "\"id\":";

/// The searcher for [`ID_KEY`], built once: these scans run for every message most clients get.
static FIND_ID: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(ID_KEY));

/// The people in a `presences` message other than `me`, by a scan for their `id` keys: no
/// parse, since these messages are most of what clients read. The receiver's own entry,
/// should the node ever include it, was not delivered to anyone else and does not count.
pub fn presences_delivered(text: &str, me: &str) -> u64 {
    let mut people = 0;
    for at in FIND_ID.find_iter(text.as_bytes()) {
        let value = &text[at + ID_KEY.len()..];
        let mine = value
            .strip_prefix('"')
            .and_then(|v| v.strip_prefix(me))
            .is_some_and(|rest| rest.starts_with('"'));
        people += u64::from(!mine);
    }
    people
}
