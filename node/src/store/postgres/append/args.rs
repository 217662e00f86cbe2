//! Appends laid out as the column arrays the group commit's statements unnest.

use tokio_postgres::types::ToSql;

use super::super::rows::{big, op_bits};
use crate::store::{FileAppend, LoggedPatch};

/// A statement's parameters.
pub(super) type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

/// Patches laid out as the column arrays a statement unnests.
#[derive(Default)]
pub(super) struct PatchColumns<'a> {
    versions: Vec<i64>,
    clients: Vec<&'a [u8]>,
    op_ids: Vec<i64>,
    people: Vec<&'a str>,
    ops: Vec<&'a str>,
    ts: Vec<Option<&'a str>>,
}

impl<'a> PatchColumns<'a> {
    fn push(&mut self, p: &'a LoggedPatch) {
        self.versions.push(big(p.version));
        self.clients.push(&p.client.0[..]);
        self.op_ids.push(op_bits(p.op_id));
        self.people.push(&p.by);
        self.ops.push(&p.ops);
        self.ts.push(p.t.as_deref());
    }

    fn extend(&mut self, other: &Self) {
        self.versions.extend(&other.versions);
        self.clients.extend(&other.clients);
        self.op_ids.extend(&other.op_ids);
        self.people.extend(&other.people);
        self.ops.extend(&other.ops);
        self.ts.extend(&other.ts);
    }

    fn params<'s>(&'s self, into: &mut Params<'s>) {
        into.extend::<[&(dyn ToSql + Sync); 6]>([
            &self.versions,
            &self.clients,
            &self.op_ids,
            &self.people,
            &self.ops,
            &self.ts,
        ]);
    }
}

/// The highest op id per client (one row per client of a file, since an upsert may not
/// touch a row twice in one statement), as column arrays.
#[derive(Default)]
pub(super) struct SeenColumns<'a> {
    clients: Vec<&'a [u8]>,
    op_ids: Vec<i64>,
    versions: Vec<i64>,
}

impl SeenColumns<'_> {
    fn extend(&mut self, other: &Self) {
        self.clients.extend(&other.clients);
        self.op_ids.extend(&other.op_ids);
        self.versions.extend(&other.versions);
    }

    fn params<'s>(&'s self, into: &mut Params<'s>) {
        into.extend::<[&(dyn ToSql + Sync); 3]>([&self.clients, &self.op_ids, &self.versions]);
    }
}

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
