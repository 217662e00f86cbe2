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
pub use super::versions::{version_message, HistoryJob, HistoryState, NameRequest, SaveJob};
use super::RoomCmd;
use crate::history::{self, new_info, HistoryRules, VersionInfo, VersionKind};
use crate::outbox::shared;
use crate::store::{Store, StoreResult};

/// Most people a version names as its editors: the first to edit since the version before.
/// Each version's entry goes to everyone in the file and into every page of the history, so
/// its size must not follow how many guests came (the sixth review: 17,230 guest names made
/// one entry 2.9 MB, and a page of the history 3.5 GB in 10 s for 0.3 MB of requests).
pub const EDITORS_NAMED: usize = 20;

impl RoomCore {
    /// A patch by `name` was applied.
    pub(super) fn edited(&mut self, name: &str, now: Instant) {
        let h = &mut self.history;
        h.dirty_since.get_or_insert(now);
        if h.editors.len() < EDITORS_NAMED && !h.editors.iter().any(|n| n == name) {
            h.editors.push(name.to_owned());
        }
    }

    /// From housekeeping: a checkpoint once the file has changed for `ATRIUM_CHECKPOINT_MS`.
    pub(super) fn maybe_checkpoint(&mut self, now: Instant) {
        let due = self.history.dirty_since.is_some_and(|since| {
            now.saturating_duration_since(since) >= self.rules.config.checkpoint_interval()
        });
        if !due || self.finishing.is_some() {
            return;
        }
        if self.rules.storage.may_grow(&self.record.owner, 0) {
            self.save_version(VersionKind::Auto, None, None, None, None);
        } else {
            // The owner is at their storage limit: tried again an interval later.
            self.rules.storage.refused("checkpoint");
            self.history.dirty_since = Some(now);
        }
    }

    /// Saves the current document as a version once it is durable.
    pub(super) fn save_version(
        &mut self,
        kind: VersionKind,
        title: Option<String>,
        description: Option<String>,
        restored_from: Option<u64>,
        reply: Option<oneshot::Sender<StoreResult<VersionInfo>>>,
    ) {
        let editors = std::mem::take(&mut self.history.editors);
        self.history.dirty_since = None;
        let mut info = new_info(self.version, crate::clock::unix_ms(), kind, editors);
        info.title = title;
        info.description = description;
        info.restored_from = restored_from;
        let job = SaveJob {
            file: self.file.clone(),
            epoch: self.epoch,
            doc: self.doc.to_json(),
            info,
            reply,
        };
        self.after_durable(Pending::Version {
            v: self.version,
            job: HistoryJob::Save(job),
        });
    }

    pub(super) fn name_version(&mut self, req: NameRequest) {
        if self.finishing.is_some() {
            let _ = req.reply.send(Err(crate::store::StoreError::Unavailable(
                "the room is closing".into(),
            )));
            return;
        }
        self.save_version(
            VersionKind::Named,
            Some(req.title),
            req.description,
            None,
            Some(req.reply),
        );
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
        self.history.dirty_since?;
        if !self.rules.storage.may_grow(&self.record.owner, 0) {
            self.rules.storage.refused("checkpoint");
            return None;
        }
        let editors = std::mem::take(&mut self.history.editors);
        self.history.dirty_since = None;
        let info = new_info(
            self.durable,
            crate::clock::unix_ms(),
            VersionKind::Auto,
            editors,
        );
        (self.durable == self.version).then(|| {
            HistoryJob::Save(SaveJob {
                file: self.file.clone(),
                epoch: self.epoch,
                doc: self.doc.to_json(),
                info,
                reply: None,
            })
        })
    }

    /// The worker saved, renamed or deleted a version: everyone in the room hears of it.
    pub(super) fn announce(&mut self, event: &str, version: &VersionInfo) {
        self.broadcast(shared(version_message(event, version)), "version");
    }
}

/// The room's history worker: carries out its jobs one at a time, in order, and tells the
/// room what it saved. Ends when the room drops its sender.
pub fn worker(
    store: Arc<dyn Store>,
    rules: HistoryRules,
    room: mpsc::UnboundedSender<RoomCmd>,
) -> (
    mpsc::UnboundedSender<HistoryJob>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<HistoryJob>();
    let task = tokio::spawn(async move {
        while let Some(job) = rx.recv().await {
            match job {
                HistoryJob::Save(job) => {
                    let saved =
                        history::save(&*store, &job.file, job.epoch, &job.doc, job.info, &rules)
                            .await;
                    match &saved {
                        Ok(info) => {
                            let _ = room.send(RoomCmd::Announce("saved", info.clone()));
                            let now = crate::clock::unix_ms();
                            if let Err(e) =
                                history::thin(&*store, &job.file, job.epoch, now, &rules).await
                            {
                                tracing::warn!(file = %job.file, error = %e, "thinning versions failed");
                            }
                        }
                        Err(e) => {
                            tracing::warn!(file = %job.file, error = %e, "saving a version failed")
                        }
                    }
                    if let Some(reply) = job.reply {
                        let _ = reply.send(saved);
                    }
                }
                HistoryJob::Delete {
                    file,
                    epoch,
                    id,
                    reply,
                } => {
                    let removed = history::remove(&*store, &file, epoch, id, &rules).await;
                    let _ = reply.send(removed);
                }
            }
        }
    });
    (tx, task)
}
