//! Asking a room for something: a join, its document, news of its file; and
//! asking again when the room closed under the caller.

use atrium_protocol::CloseCode;
use std::time::Duration;

use tokio::sync::oneshot;

use super::super::shares::Opener;
use super::super::{JoinError, JoinRequest, Joined, RoomCmd};
use super::{RoomHandle, Rooms};
use crate::ids::FileId;
use crate::store::FileRecord;

/// Asking a room again after it closed under a caller: pauses that double from 5 ms
/// to at most 200 ms, for at most 2 s in all. A room closes for a moment only (idle,
/// handed over), so a pause lets its successor start; a spin would give up in
/// microseconds and refuse people a room that was about to open.
struct Again {
    pause: Duration,
    until: tokio::time::Instant,
}

impl Again {
    const FIRST: Duration = Duration::from_millis(5);
    const MOST: Duration = Duration::from_millis(200);
    const WITHIN: Duration = Duration::from_secs(2);

    fn new() -> Self {
        Self {
            pause: Self::FIRST,
            until: tokio::time::Instant::now() + Self::WITHIN,
        }
    }

    /// Waits before the next try; false when the time for tries is over.
    async fn pause(&mut self) -> bool {
        if tokio::time::Instant::now() + self.pause > self.until {
            return false;
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(Self::MOST);
        true
    }
}

impl Rooms {
    /// Joins a socket to the file's room. A joiner waits in the room's queue while the
    /// room loads, and gets the load's own result; one that reached a room as it was
    /// closing asks again after a pause (see [`Again`]). A join whose access was not
    /// checked before (`may_edit` is None: its room was open when it began) only enters
    /// a live room: when there is none, [`JoinError::Unchecked`] tells the caller to
    /// check before a room is opened for it.
    pub async fn join(
        &self,
        file: &FileId,
        req: &JoinRequest,
    ) -> Result<(RoomHandle, Joined), JoinError> {
        let mut again = Again::new();
        loop {
            let handle = match req.may_edit {
                Some(editor) => {
                    let opener = Opener {
                        address: req.outbox.address(),
                        account: req.account.as_ref().map(|(id, _)| id.clone()),
                        editor,
                    };
                    self.open_by(file, opener)
                        .ok_or(JoinError::Unavailable(CloseCode::ServiceRestart))?
                }
                None => self.live(file).ok_or(JoinError::Unchecked)?,
            };
            match Self::ask_room(&handle, |reply| RoomCmd::Join(req.clone(), reply)).await {
                Some(Err(JoinError::Retry)) | None => {}
                Some(result) => return result.map(|joined| (handle, joined)),
            }
            if !again.pause().await {
                return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
            }
        }
    }

    /// The current document as the room holds it (opening the room if needed, for
    /// `opener`, whose shares of memory it then counts against).
    pub async fn document(
        &self,
        file: &FileId,
        opener: Opener,
    ) -> Result<(u64, String), JoinError> {
        self.command(file, opener, RoomCmd::GetDoc).await
    }

    /// The current document's size as the document limits count it (opening the room if
    /// needed, as [`Self::document`] does): what work on it is sized by.
    pub async fn document_size(&self, file: &FileId, opener: Opener) -> Result<usize, JoinError> {
        self.command(file, opener, RoomCmd::DocSize).await
    }

    /// Sends the file's room (opening it if needed) the command `make` builds around a
    /// reply channel, and answers the room's reply; asks again (see [`Again`]) when the
    /// room ended before answering.
    pub async fn command<T>(
        &self,
        file: &FileId,
        opener: Opener,
        make: impl Fn(oneshot::Sender<T>) -> RoomCmd,
    ) -> Result<T, JoinError> {
        let mut again = Again::new();
        loop {
            match self
                .ask(file, opener.clone(), CloseCode::TryAgainLater, &make)
                .await?
            {
                (_, Some(doc)) => return Ok(doc),
                // The room ended before answering: it failed to load or went idle. A room
                // its owner's or the address's share of memory has no room for is not asked
                // again (each try would read the file and be refused).
                (_, None) if self.existing(file).is_none() => match self.ctx.store.file(file).await
                {
                    Ok(record) => self.may_open(&record, &opener)?,
                    Err(_) => return Err(JoinError::NotFound),
                },
                (_, None) => {}
            }
            if !again.pause().await {
                return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
            }
        }
    }

    /// Opens the file's room and sends it the command `cmd` makes around a reply
    /// channel; the room's answer, or None when it closed before answering.
    /// `unopened` is the close code when this node cannot open the room at all.
    async fn ask<T>(
        &self,
        file: &FileId,
        opener: Opener,
        unopened: CloseCode,
        cmd: impl FnOnce(oneshot::Sender<T>) -> RoomCmd,
    ) -> Result<(RoomHandle, Option<T>), JoinError> {
        let handle = self
            .open_by(file, opener)
            .ok_or(JoinError::Unavailable(unopened))?;
        let answer = Self::ask_room(&handle, cmd).await;
        Ok((handle, answer))
    }

    /// Sends a room the command `cmd` makes around a reply channel; its answer, or None
    /// when it closed before answering.
    async fn ask_room<T>(
        handle: &RoomHandle,
        cmd: impl FnOnce(oneshot::Sender<T>) -> RoomCmd,
    ) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        match handle.tx.send(cmd(reply)) {
            Ok(()) => answer.await.ok(),
            Err(_) => None,
        }
    }

    /// Tells a live room its file's settings changed.
    pub fn file_changed(&self, record: &FileRecord) {
        if let Some(h) = self.existing(&record.id) {
            let _ = h.tx.send(RoomCmd::FileChanged(record.clone()));
        }
    }

    /// Opens the file's room if needed and hands it `cmd`, whose answer (if any) comes on
    /// the channel inside it; a room that ends before answering drops that channel.
    pub fn send(&self, file: &FileId, cmd: RoomCmd) -> Result<(), JoinError> {
        let handle = self
            .open(file)
            .ok_or(JoinError::Unavailable(CloseCode::TryAgainLater))?;
        handle.tx.send(cmd).map_err(|_| JoinError::Retry)
    }

    /// Sends a live room a command that needs no answer (nothing when it is not open).
    pub fn tell(&self, file: &FileId, cmd: RoomCmd) {
        if let Some(h) = self.existing(file) {
            let _ = h.tx.send(cmd);
        }
    }

    pub fn file_deleted(&self, file: &FileId) {
        if let Some(h) = self.existing(file) {
            let _ = h.tx.send(RoomCmd::Deleted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn asking_again_pauses_longer_each_time_and_stops_within_two_seconds() {
        let started = tokio::time::Instant::now();
        let mut again = Again::new();
        let mut pauses = Vec::new();
        loop {
            let before = tokio::time::Instant::now();
            if !again.pause().await {
                break;
            }
            pauses.push(before.elapsed().as_millis());
        }
        assert_eq!(pauses[..6], [5, 10, 20, 40, 80, 160]);
        assert!(pauses[6..].iter().all(|&p| p == 200), "{pauses:?}");
        let spent = started.elapsed();
        assert!(
            spent <= Again::WITHIN && spent > Again::WITHIN - Again::MOST,
            "{spent:?}"
        );
    }
}
