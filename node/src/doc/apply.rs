//! Applying a patch to a document: all its ops or none.

use super::entry::Entry;
use super::op::{check_count, invalid_at, node_too_large, too_large, Op, Props};
use super::write::{merged, props_iter, write_set};
use super::{DocLimits, Document, PatchError, MIN_NODE_BYTES};

/// How much a node already over [`DocLimits::max_node_bytes`] may grow in one patch.
const OVER_LIMIT_GROWTH: usize = 4096;

/// How to revert one applied op.
enum Undo<'o> {
    /// Put back this node, replacing whatever is at its id.
    Restore(Entry),
    /// Remove the node of this id (a put created it).
    Remove(&'o str),
}

impl Document {
    /// "document is N bytes", with how they were counted when small nodes
    /// made it more than the serialized length.
    pub(super) fn size_text(&self, verb: &str) -> String {
        let charged = self.charged_len();
        match self.shortfall {
            0 => format!("document {verb} {charged} bytes"),
            _ => format!(
                "document {verb} {charged} bytes ({} serialized, each node counted as at least {MIN_NODE_BYTES})",
                self.serialized_len()
            ),
        }
    }

    /// Applies ops in order, all or none.
    ///
    /// The size limit is checked on the final state, so a patch may pass
    /// through a larger state as long as it ends within the limit. A patch
    /// that does not grow the document is accepted even if the document is
    /// already over the limit (e.g. after the limit was lowered), so clients
    /// can always delete their way back under it. Sizes are as the limit
    /// counts them ([`Document::charged_len`]).
    pub fn apply(&mut self, ops: &[Op], limits: &DocLimits) -> Result<(), PatchError> {
        self.apply_freeing(ops, limits, 0)
    }

    /// [`Document::apply`] for a patch that must also make the document `freed` bytes
    /// smaller (as the limit counts them) to be accepted: it adds that much elsewhere.
    pub fn apply_freeing(
        &mut self,
        ops: &[Op],
        limits: &DocLimits,
        freed: usize,
    ) -> Result<(), PatchError> {
        check_count(ops.len(), limits)?;
        for (i, op) in ops.iter().enumerate() {
            op.validate(limits).map_err(|m| invalid_at(i, m))?;
        }
        let start_len = self.charged_len();
        // The ops grouped by node, each group in patch order (a stable sort):
        // nodes are independent, so applying group by group gives what op by
        // op would, and each touched node is rewritten once however many ops
        // name it (a patch of 1,000 sets on one large node copies it once).
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&i| ops[i].id());
        let mut undo = Vec::new();
        let mut grown_past_node_limit = None;
        for group in order.chunk_by(|&a, &b| ops[a].id() == ops[b].id()) {
            let id = ops[group[0]].id();
            let before = self.nodes.get(id).map_or(0, |e| e.0.len());
            undo.extend(self.apply_group(group.iter().map(|&i| &ops[i])));
            let after = self.nodes.get(id).map_or(0, |e| e.0.len());
            // Crossing the limit is refused. A node already over it (from before the limit,
            // or brought back by a restore) stays editable: it may shrink, or grow by a
            // little (a coordinate's new digits), never by much.
            let allowed = match before > limits.max_node_bytes {
                true => before + OVER_LIMIT_GROWTH,
                false => limits.max_node_bytes,
            };
            if after > allowed {
                grown_past_node_limit.get_or_insert(id);
            }
        }
        if let Some(id) = grown_past_node_limit {
            self.rollback(undo);
            return Err(node_too_large(id, limits.max_node_bytes));
        }
        let end_len = self.charged_len();
        let refused = match freed {
            0 => end_len > limits.max_doc_bytes && end_len > start_len,
            _ => end_len.saturating_add(freed) > start_len,
        };
        if refused {
            let what = self.size_text("would be");
            self.rollback(undo);
            debug_assert_eq!(self.charged_len(), start_len);
            return Err(too_large(what, limits.max_doc_bytes));
        }
        Ok(())
    }

    /// Applies the ops of one node, in order, as one change; returns how to
    /// revert it, or None if it changed nothing.
    fn apply_group<'o>(&mut self, group: impl Iterator<Item = &'o Op>) -> Option<Undo<'o>> {
        /// Where the node stands after the ops so far.
        enum State<'o> {
            /// As stored (absent or not), with these sets on top.
            Stored(Vec<&'o Props>),
            /// Replaced by a put's props, with these sets on top.
            Put(&'o Props, Vec<&'o Props>),
            Deleted,
        }
        let mut id = "";
        let mut state = State::Stored(Vec::new());
        for op in group {
            id = op.id();
            match (op, &mut state) {
                (Op::Put { props, .. }, _) => state = State::Put(props, Vec::new()),
                (Op::Delete { .. }, _) => state = State::Deleted,
                (Op::Set { props, .. }, State::Stored(sets) | State::Put(_, sets)) => {
                    sets.push(props)
                }
                (Op::Set { .. }, State::Deleted) => {}
            }
        }
        let new = match state {
            State::Deleted => return self.remove_entry(id).map(Undo::Restore),
            State::Stored(sets) => {
                // Sets on a missing node do nothing.
                let old = self.nodes.get(id)?;
                let new = Entry::build(id, |out| {
                    // Room for the node as it was and then some, so a large
                    // node is not copied through doubling buffers.
                    out.reserve(old.0.len() * 9 / 8 + 256);
                    match sets.as_slice() {
                        [] => out.extend_from_slice(old.props_json().as_bytes()),
                        [one] => write_set(old.props_json(), props_iter(one), out),
                        _ => write_set(old.props_json(), merged(sets, None).into_iter(), out),
                    }
                });
                if new.0 == old.0 {
                    return None;
                }
                new
            }
            State::Put(props, sets) if sets.is_empty() => Entry::new(id, props),
            State::Put(props, sets) => Entry::build(id, |out| {
                let all = merged(sets, Some(props));
                serde_json::to_writer(out, &all).expect("JSON values always serialize")
            }),
        };
        Some(match self.insert_entry(new) {
            Some(prev) => Undo::Restore(prev),
            None => Undo::Remove(id),
        })
    }

    /// Reverts applied ops, newest first, so each step sees the state it
    /// was recorded against.
    fn rollback(&mut self, undo: Vec<Undo<'_>>) {
        for step in undo.into_iter().rev() {
            match step {
                Undo::Restore(entry) => {
                    self.insert_entry(entry);
                }
                Undo::Remove(id) => {
                    self.remove_entry(id);
                }
            }
        }
    }
}
