//! Delivered updates: one patch, or one person's presence entry, that reaches a client other
//! than its sender. The unit the node's CPU is divided by (a `presences` message carrying 9
//! people is 9 updates delivered, not one message), counted where the clients read.

/// An entry's `id` key. Every entry of a `presences` message has exactly one, and nothing else
/// in the message does (its values are ids, numbers and arrays of them). The pattern cannot
/// occur inside a string, where a quote is escaped, so whatever order the node writes the
/// keys in, each occurrence is one person.
const ID_KEY: &str = "\"id\":";

/// The people in a `presences` message other than `me`, by a scan for their `id` keys: no
/// parse, since these messages are most of what clients read. The receiver's own entry,
/// should the node ever include it, was not delivered to anyone else and does not count.
pub fn presences_delivered(text: &str, me: &str) -> u64 {
    let mut people = 0;
    for (at, _) in text.match_indices(ID_KEY) {
        let value = &text[at + ID_KEY.len()..];
        let mine = value
            .strip_prefix('"')
            .and_then(|v| v.strip_prefix(me))
            .is_some_and(|rest| rest.starts_with('"'));
        people += u64::from(!mine);
    }
    people
}
