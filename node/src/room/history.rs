//! Versions from the room's side: who edited since the last version, when a checkpoint is
//! due (after `ATRIUM_CHECKPOINT_MS` of edits, and when the room closes after edits), named
//! versions, and the worker that writes them, one at a time and fenced by the room's epoch.
//!
//! A version is taken from the room's own document once its version is durable (it waits
//! in `pending` like an ack): one serialization per version, far off the per-patch path.
//! The worker diffs it against the stored history and writes a delta or a base
//! (`crate::history`), then thins the file's history with age.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};

use super::core::RoomCore;
use super::exit::Effect;
use super::pending::Pending;
pub use super::versions::{
    version_message, Draft, HistoryJob, HistoryState, NameRequest, SaveJob, SaveOutcome,
};
use super::RoomCmd;
use crate::history::turns::WorkRefused;
use crate::history::{self, new_info, HistoryRules, VersionInfo, VersionKind};
use crate::memory::Reservation;
use crate::metrics::Metrics;
use crate::outbox::shared;
use crate::storage::{Share, Storage, StorageError};
use crate::store::Store;

/// Most people a version names as its editors: the first to edit since the version before.
/// Each version's entry goes to everyone in the file and into every page of the history, so
/// its size must not follow how many guests came (the sixth review: 17,230 guest names made
/// one entry 2.9 MB, and a page of the history 3.5 GB in 10 s for 0.3 MB of requests).
pub const EDITORS_NAMED: usize = 20;

/// Memory saving a version takes per byte of document: its text, the stored texts of the
/// version before it and that version rebuilt from them, and the delta. The texts are
/// walked in id order, never parsed into maps of nodes (which took 25 times the document
/// for one of 200,000 empty nodes, and 2.8 times for 8 MB of 60,000 shapes).
pub const SAVE_COST: u64 = 4;

/// Documents up to this size are saved without asking the memory budget.
const SMALL_SAVE: usize = 64 * 1024;

/// The memory budget has no room for a version's save now.
#[derive(Debug)]
pub(super) struct NoRoom;

impl RoomCore {
    /// A patch by `name` was applied.
    pub(super) fn edited(&mut self, name: &str, now: Instant) {
        let h = &mut self.history;
        h.dirty_since.get_or_insert(now);
        if h.editors.len() < EDITORS_NAMED && !h.editors.iter().any(|n| n == name) {
            h.editors.push(name.to_owned());
        }
    }

    /// The share of storage an automatic version of the edits since the last may fill:
    /// the link's when some came by a link key.
    fn checkpoint_share(&self) -> Share {
        Share::by_link(self.history.by_link)
    }

    /// From housekeeping: a checkpoint once the file has changed for `ATRIUM_CHECKPOINT_MS`.
    pub(super) fn maybe_checkpoint(&mut self, now: Instant) {
        let due = self.history.dirty_since.is_some_and(|since| {
            now.saturating_duration_since(since) >= self.rules.config.checkpoint_interval()
        });
        if !due || self.finishing.is_some() {
            return;
        }
        let share = self.checkpoint_share();
        if !self.rules.storage.may_grow(&self.holder, 0, share) {
            // The owner is at their storage limit (or the link's guests at their share):
            // tried again an interval later.
            self.rules.storage.refused("checkpoint");
            self.history.dirty_since = Some(now);
            return;
        }
        match self.promise_save() {
            Ok(memory) => self.save_version(Draft::checkpoint(share), None, memory),
            // No memory for it now: tried again an interval later, with the same editors.
            Err(NoRoom) => self.history.dirty_since = Some(now),
        }
    }

    /// What saving the document as a version takes ([`SAVE_COST`] per byte), promised
    /// from the memory budget: nothing for a small document, an error when the budget has
    /// no room. Each save's document waits for its version to be durable and then for the
    /// worker, so without it ten namings of a 36 MB file in a row queued ten copies and
    /// their rebuilds (the ninth review: 416 MiB resident with a budget of 256).
    pub(super) fn promise_save(&self) -> Result<Option<Reservation>, NoRoom> {
        let size = self.doc.serialized_len();
        if size <= SMALL_SAVE {
            return Ok(None);
        }
        match self.rules.memory.reserve(SAVE_COST * size as u64) {
            Some(promised) => Ok(Some(promised)),
            None => {
                self.rules.metrics.memory_refusals.inc();
                Err(NoRoom)
            }
        }
    }

    /// [`Self::promise_save`] for a version saved whatever the budget says (a restore's,
    /// which its own reservation counted, and a room's last): what there is room for.
    pub(super) fn promise_save_if_room(&self) -> Option<Reservation> {
        self.promise_save().ok().flatten()
    }

    /// Saves the current document as a version once it is durable.
    pub(super) fn save_version(
        &mut self,
        draft: Draft,
        reply: Option<oneshot::Sender<Result<VersionInfo, WorkRefused>>>,
        memory: Option<Reservation>,
    ) {
        let editors = std::mem::take(&mut self.history.editors);
        let had_edits = self.history.dirty_since.take().is_some();
        let by_link = std::mem::take(&mut self.history.by_link);
        self.history.queued += 1;
        if draft.within.is_some() {
            self.history.unconfirmed += 1;
        }
        let mut info = new_info(self.version, crate::clock::unix_ms(), draft.kind, editors);
        info.title = draft.title;
        info.description = draft.description;
        info.restored_from = draft.restored_from;
        let job = SaveJob {
            file: self.file.clone(),
            epoch: self.epoch,
            doc: self.doc.to_json(),
            info,
            reply,
            memory,
            holder: self.holder.clone(),
            within: draft.within,
            queued: self.history.queued,
            had_edits,
            by_link,
        };
        self.after_durable(Pending::Version {
            v: self.version,
            job: HistoryJob::Save(Box::new(job)),
        });
    }

    pub(super) fn name_version(&mut self, req: NameRequest) {
        if self.finishing.is_some() {
            let _ = req.reply.send(Err(WorkRefused::Store(
                crate::store::StoreError::Unavailable("the room is closing".into()),
            )));
            return;
        }
        let Ok(memory) = self.promise_save() else {
            let _ = req.reply.send(Err(WorkRefused::NoRoom));
            return;
        };
        let draft = Draft {
            kind: VersionKind::Named,
            title: Some(req.title),
            description: req.description,
            restored_from: None,
            within: Some(req.within),
        };
        self.save_version(draft, Some(req.reply), memory);
    }

    /// A job from outside the room (a deletion): made the room's, fenced by its epoch.
    pub(super) fn history_job(&mut self, mut job: HistoryJob) {
        match &mut job {
            HistoryJob::Save(j) => j.epoch = self.epoch,
            HistoryJob::Delete { epoch, .. } => *epoch = self.epoch,
        }
        self.effect(Effect::History(job));
    }

    /// The version a room that ends after edits saves (its document is durable by then).
    pub fn closing_version(&mut self) -> Option<HistoryJob> {
        if !self.history.unkept() {
            return None;
        }
        let share = self.checkpoint_share();
        if !self.rules.storage.may_grow(&self.holder, 0, share) {
            self.rules.storage.refused("checkpoint");
            return None;
        }
        let editors = std::mem::take(&mut self.history.editors);
        let had_edits = self.history.dirty_since.take().is_some();
        let by_link = std::mem::take(&mut self.history.by_link);
        self.history.queued += 1;
        let info = new_info(
            self.durable,
            crate::clock::unix_ms(),
            VersionKind::Auto,
            editors,
        );
        (self.durable == self.version).then(|| {
            HistoryJob::Save(Box::new(SaveJob {
                file: self.file.clone(),
                epoch: self.epoch,
                doc: self.doc.to_json(),
                info,
                reply: None,
                // Once a room, and after edits only.
                memory: self.promise_save_if_room(),
                holder: self.holder.clone(),
                within: Some(share),
                queued: self.history.queued,
                had_edits,
                by_link,
            }))
        })
    }

    /// What came of a version handed to the worker: one saved is announced to everyone;
    /// one not kept (no storage for it, or the store failed) puts its edits and editors
    /// back, to be kept by the next version, unless a later version holds them already.
    pub(super) fn version_done(&mut self, outcome: SaveOutcome, now: Instant) {
        if outcome.checked {
            self.history.unconfirmed = self.history.unconfirmed.saturating_sub(1);
        }
        match outcome.saved {
            Some(info) => self.announce("saved", &info),
            None if outcome.had_edits && outcome.queued == self.history.queued => {
                self.history.dirty_since.get_or_insert(now);
                self.history.by_link |= outcome.by_link;
                let kept = &mut self.history.editors;
                for name in outcome.editors {
                    if kept.len() < EDITORS_NAMED && !kept.contains(&name) {
                        kept.push(name);
                    }
                }
            }
            None => {}
        }
    }

    /// The worker saved, renamed or deleted a version: those in the room who may read the
    /// history hear of it.
    pub(super) fn announce(&mut self, event: &str, version: &VersionInfo) {
        self.broadcast_history(shared(version_message(event, version)), "version");
    }
}

/// What the room's history worker works with.
pub struct WorkerParts {
    pub store: Arc<dyn Store>,
    pub storage: Arc<Storage>,
    pub rules: HistoryRules,
    pub metrics: Arc<Metrics>,
}

impl WorkerParts {
    /// Encodes a version and stores it if it fits the share of its owner's storage it
    /// must: its size is known only once encoded, so a check made before (with nothing
    /// to add) let one version past the limit.
    pub(super) async fn save(
        &self,
        job: &SaveJob,
        doc: String,
        info: VersionInfo,
    ) -> Result<VersionInfo, WorkRefused> {
        let encoded =
            history::encode_on_lane(&*self.store, &job.file, doc, &self.rules, &self.metrics)
                .await?;
        // What it stores, its text and its row: a named version of an unchanged document
        // stores a few bytes of delta but up to 8 KB of title and description.
        let bytes = encoded.data.len() as u64 + info.text_bytes() + history::VERSION_ROW_BYTES;
        if let Some(share) = job.within {
            let what = match info.kind {
                VersionKind::Named => "version",
                _ => "checkpoint",
            };
            self.storage
                .may_keep(&job.holder, bytes, share, what)
                .map_err(|full| WorkRefused::Storage(StorageError::full(full)))?;
        }
        let stored =
            history::store_encoded(&*self.store, &job.file, job.epoch, info, &encoded).await?;
        // Counted at once, so versions saved within a measure's second add up.
        self.storage.added(&job.holder, bytes);
        Ok(stored)
    }
}

/// The room's history worker: carries out its jobs one at a time, in order, and tells the
/// room what it saved. Ends when the room drops its sender.
pub fn worker(
    parts: WorkerParts,
    room: mpsc::UnboundedSender<RoomCmd>,
) -> (
    mpsc::UnboundedSender<HistoryJob>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<HistoryJob>();
    let task = tokio::spawn(async move {
        let WorkerParts { store, rules, .. } = &parts;
        while let Some(job) = rx.recv().await {
            match job {
                HistoryJob::Save(mut job) => {
                    let (file, epoch) = (job.file.clone(), job.epoch);
                    let doc = std::mem::take(&mut job.doc);
                    let info = job.info.clone();
                    let saved = parts.save(&job, doc, info).await;
                    // What the save took may stay resident a moment: kept until sampled.
                    if let Some(memory) = job.memory.take() {
                        memory.hold_until_sampled();
                    }
                    match &saved {
                        Ok(_) => {
                            let now = crate::clock::unix_ms();
                            if let Err(e) = history::thin(&**store, &file, epoch, now, rules).await
                            {
                                tracing::warn!(file = %file, error = %e, "thinning versions failed");
                            }
                        }
                        Err(WorkRefused::Storage(_)) => {
                            tracing::debug!(file = %file, "a version did not fit its owner's storage")
                        }
                        Err(e) => {
                            tracing::warn!(file = %file, error = %e, "saving a version failed")
                        }
                    }
                    let _ = room.send(RoomCmd::VersionDone(SaveOutcome {
                        queued: job.queued,
                        checked: job.within.is_some(),
                        had_edits: job.had_edits,
                        by_link: job.by_link,
                        editors: std::mem::take(&mut job.info.editors),
                        saved: saved.as_ref().ok().cloned(),
                    }));
                    if let Some(reply) = job.reply.take() {
                        let _ = reply.send(saved);
                    }
                }
                HistoryJob::Delete {
                    file,
                    epoch,
                    id,
                    reply,
                } => {
                    let removed = history::remove(&**store, &file, epoch, id, rules).await;
                    let _ = reply.send(removed);
                }
            }
        }
    });
    (tx, task)
}
