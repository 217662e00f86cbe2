//! Patches and per-client op ids as the column arrays a statement unnests.

use tokio_postgres::types::ToSql;

use crate::store::postgres::rows::{big, op_bits};
use crate::store::LoggedPatch;

/// A statement's parameters.
pub(super) type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

/// Patches laid out as the column arrays a statement unnests.
#[derive(Default)]
pub(super) struct PatchColumns<'a> {
    pub(super) versions: Vec<i64>,
    clients: Vec<&'a [u8]>,
    op_ids: Vec<i64>,
    people: Vec<&'a str>,
    ops: Vec<&'a str>,
    ts: Vec<Option<&'a str>>,
}

impl<'a> PatchColumns<'a> {
    pub(super) fn push(&mut self, p: &'a LoggedPatch) {
        self.versions.push(big(p.version));
        self.clients.push(&p.client.0[..]);
        self.op_ids.push(op_bits(p.op_id));
        self.people.push(&p.by);
        self.ops.push(&p.ops);
        self.ts.push(p.t.as_deref());
    }

    pub(super) fn extend(&mut self, other: &Self) {
        self.versions.extend(&other.versions);
        self.clients.extend(&other.clients);
        self.op_ids.extend(&other.op_ids);
        self.people.extend(&other.people);
        self.ops.extend(&other.ops);
        self.ts.extend(&other.ts);
    }

    pub(super) fn params<'s>(&'s self, into: &mut Params<'s>) {
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
    pub(super) clients: Vec<&'a [u8]>,
    pub(super) op_ids: Vec<i64>,
    pub(super) versions: Vec<i64>,
}

impl SeenColumns<'_> {
    pub(super) fn extend(&mut self, other: &Self) {
        self.clients.extend(&other.clients);
        self.op_ids.extend(&other.op_ids);
        self.versions.extend(&other.versions);
    }

    pub(super) fn params<'s>(&'s self, into: &mut Params<'s>) {
        into.extend::<[&(dyn ToSql + Sync); 3]>([&self.clients, &self.op_ids, &self.versions]);
    }
}
