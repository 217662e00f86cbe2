//! The writer's side: taking what is queued, and watching for a close.

use std::sync::atomic::Ordering;

use super::{CloseRequest, CloseWatch, Out, OutboxReceiver, Queued};

impl Drop for OutboxReceiver {
    /// What the writer took, and what it never took, gives back what it held: a socket
    /// that ended with a large welcome still queued kept its draw on the node-wide
    /// [`Budget`](super::Budget) for good before.
    fn drop(&mut self) {
        self.written();
        self.frames.close();
        while let Ok(q) = self.frames.try_recv() {
            q.give_back(&self.close.0, q.out.len());
        }
    }
}

impl OutboxReceiver {
    /// Takes up to `max` queued items (waiting for the first); 0 once every
    /// sender is gone. Their bytes leave the queue's account here.
    pub async fn recv_many(&mut self, out: &mut Vec<Out>, max: usize) -> usize {
        let n = self.frames.recv_many(&mut self.taken, max).await;
        let shared = &self.close.0;
        for mut q in self.taken.drain(..) {
            match q.budget.take() {
                // Given back once written.
                Some(budget) => self.writing.push((budget, q.out.len())),
                None => q.give_back(shared, q.out.len()),
            }
            self.copies_writing.extend(q.copy.take());
            out.push(q.out);
        }
        n
    }

    /// Gives back what the large messages just written drew on the node-wide budget.
    pub(super) fn written(&mut self) {
        let shared = &self.close.0;
        let address = shared.address.get().copied();
        for (budget, len) in self.writing.drain(..) {
            shared.drawn.fetch_sub(len, Ordering::AcqRel);
            budget.give(address, len);
        }
        self.copies_writing.clear();
    }

    /// Takes whatever is queued right now, without waiting.
    pub fn drain_now(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        while let Ok(q) = self.frames.try_recv() {
            out.push(self.unqueue(q));
        }
        out
    }

    /// Takes an item out of the queue unwritten: what it held is given back (a copy it
    /// shares, when it is dropped here).
    fn unqueue(&self, q: Queued) -> Out {
        q.give_back(&self.close.0, q.out.len());
        q.out
    }
}

impl CloseWatch {
    /// Waits until a close is requested, and returns it.
    pub async fn closed(&self) -> CloseRequest {
        loop {
            let notified = self.0.notify.notified();
            if let Some(req) = self.requested() {
                return req;
            }
            notified.await;
        }
    }

    pub fn requested(&self) -> Option<CloseRequest> {
        if !self.0.closing.load(Ordering::Acquire) {
            return None;
        }
        self.0
            .close
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
