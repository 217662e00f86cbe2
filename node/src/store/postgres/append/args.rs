//! Appends laid out as the column arrays the group commit's statements unnest.

use super::columns::{Params, PatchColumns, SeenColumns};
use crate::store::postgres::rows::{big, op_bits};
use crate::store::{FileAppend, LoggedPatch};

/// One file's append, laid out as the column arrays `APPEND_SQL` unnests.
pub(super) struct AppendArgs<'a> {
    id: &'a str,
    epoch: i64,
    last: i64,
    now: i64,
    before: i64,
    patches: PatchColumns<'a>,
    seen: SeenColumns<'a>,
}

impl<'a> AppendArgs<'a> {
    pub(super) fn new(
        append: &'a FileAppend,
        first: &LoggedPatch,
        last: &LoggedPatch,
        now: i64,
    ) -> Self {
        let mut args = AppendArgs {
            id: append.file.as_str(),
            epoch: big(append.epoch),
            last: big(last.version),
            now,
            before: big(first.version) - 1,
            patches: PatchColumns::default(),
            seen: SeenColumns::default(),
        };
        // Per client, the first patch with its highest op id: what applying the
        // patches one by one with `excluded.op_id > client_ops.op_id` would keep.
        let mut best: Vec<(&'a [u8; 16], u64, u64)> = Vec::new();
        for p in &append.patches {
            args.patches.push(p);
            match best.iter_mut().find(|(c, _, _)| **c == p.client.0) {
                Some(entry) if p.op_id > entry.1 => *entry = (entry.0, p.op_id, p.version),
                Some(_) => {}
                None => best.push((&p.client.0, p.op_id, p.version)),
            }
        }
        // A fixed order, so concurrent upserts (there are none today) lock alike.
        best.sort_by(|a, b| a.0.cmp(b.0));
        for (client, op_id, version) in best {
            args.seen.clients.push(&client[..]);
            args.seen.op_ids.push(op_bits(op_id));
            args.seen.versions.push(big(version));
        }
        args
    }

    /// The parameters of `APPEND_SQL`, in its order.
    pub(super) fn params(&self) -> Params<'_> {
        let mut params: Params<'_> =
            vec![&self.id, &self.epoch, &self.last, &self.now, &self.before];
        self.patches.params(&mut params);
        self.seen.params(&mut params);
        params
    }
}

/// Every file's append as columns of one statement (`APPEND_ALL_SQL`).
#[derive(Default)]
pub(super) struct AppendAll<'a> {
    ids: Vec<&'a str>,
    epochs: Vec<i64>,
    lasts: Vec<i64>,
    befores: Vec<i64>,
    /// The file of each patch row, and of each seen row.
    patch_files: Vec<&'a str>,
    patches: PatchColumns<'a>,
    seen_files: Vec<&'a str>,
    seen: SeenColumns<'a>,
}

impl<'a> AppendAll<'a> {
    pub(super) fn push(&mut self, a: &AppendArgs<'a>) {
        self.ids.push(a.id);
        self.epochs.push(a.epoch);
        self.lasts.push(a.last);
        self.befores.push(a.before);
        self.patch_files
            .extend(std::iter::repeat_n(a.id, a.patches.versions.len()));
        self.patches.extend(&a.patches);
        self.seen_files
            .extend(std::iter::repeat_n(a.id, a.seen.clients.len()));
        self.seen.extend(&a.seen);
    }

    /// The parameters of `APPEND_ALL_SQL`, in its order, with `now` as the files' new
    /// `updated_at`.
    pub(super) fn params<'s>(&'s self, now: &'s i64) -> Params<'s> {
        let mut params: Params<'s> = vec![&self.ids, &self.epochs, &self.lasts, &self.befores, now];
        params.push(&self.patch_files);
        self.patches.params(&mut params);
        params.push(&self.seen_files);
        self.seen.params(&mut params);
        params
    }
}
