//! Reads of whole stored documents (version rows) on a runtime of their own.
//!
//! A version's rows are megabytes: receiving them, parsing the protocol's messages and
//! copying the blobs out is real CPU, and on the runtime's workers it is taken at full
//! priority from relaying (the embedded store's reads of the same rows, on the runtime's
//! blocking threads, took a core from relaying under a loop of comparisons: honest relay
//! p99 1.2 -> 11 ms; see `docs/reliability.md`). So these reads have a pool of connections
//! of their own (four, which a read waits for rather than fail) whose connections live on
//! one thread at the bulk lane's lower priority, and each read runs there from the pool's
//! checkout to its last row: their decoding takes at most that one thread.

use std::future::Future;
use std::sync::OnceLock;

use deadpool_postgres::Pool;
use tokio::runtime::Handle;

use crate::store::{StoreError, StoreResult};

/// The pool whose connections and reads live on the bulk thread.
pub(super) struct BulkReads {
    pool: Pool,
}

/// The bulk thread's runtime, started on first use and kept for the process's life (one
/// thread, whatever the number of stores).
fn runtime() -> &'static Handle {
    static RUNTIME: OnceLock<Handle> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("atrium-pg-bulk".into())
            .spawn(move || {
                crate::priority::bulk_thread();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    // Gives its freed memory back when the node asks, as the lane does.
                    .on_thread_park(crate::allocator::on_idle)
                    .enable_all()
                    .build()
                    .expect("the bulk reads' runtime starts");
                let _ = tx.send(runtime.handle().clone());
                runtime.block_on(std::future::pending::<()>());
            })
            .expect("the bulk reads' thread starts");
        rx.recv().expect("the bulk reads' runtime answers")
    })
}

/// Aborts a bulk read whose caller has gone (a client that left mid-request).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl BulkReads {
    pub(super) fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// Runs `read` with the bulk pool on the bulk thread, and answers what it answers.
    pub(super) async fn run<T, F, Fut>(&self, read: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(Pool) -> Fut,
        Fut: Future<Output = StoreResult<T>> + Send + 'static,
    {
        let task = runtime().spawn(read(self.pool.clone()));
        let _abort = AbortOnDrop(task.abort_handle());
        task.await
            .map_err(|e| StoreError::Unavailable(format!("a bulk read failed: {e}")))?
    }
}
