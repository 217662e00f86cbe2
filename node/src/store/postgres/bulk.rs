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
//!
//! A read whose caller left (a client gone mid-request) is stopped in the server too: the
//! server is asked to cancel the statement, which it may still be running, and its
//! connection is then closed rather than handed back, so rows still on their way are not
//! decoded for nobody and the next read does not wait behind them.

use std::future::Future;
use std::sync::OnceLock;

use deadpool_postgres::{Object, Pool};
use tokio::runtime::Handle;
use tokio_postgres::types::ToSql;
use tokio_postgres::{CancelToken, Row};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::rows::{pool_error, unavailable};
use crate::store::{StoreError, StoreResult};

/// One owned parameter of a bulk read.
pub(super) type OwnedParam = Box<dyn ToSql + Send + Sync>;

/// The pool whose connections and reads live on the bulk thread.
pub(super) struct BulkReads {
    pool: Pool,
    /// For the server's cancel requests.
    tls: MakeRustlsConnect,
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

/// A checked-out connection whose statement, if left unfinished (the read aborted), is
/// stopped: the connection is closed instead of returned, and the server asked to cancel.
struct Reading {
    client: Option<Object>,
    cancel: CancelToken,
    tls: MakeRustlsConnect,
    finished: bool,
}

impl Drop for Reading {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Out of the pool at once; closed once the cancel is sent (a proxy in between may
        // drop a cancel for a session whose client has gone).
        let client = self.client.take().map(Object::take);
        let (cancel, tls) = (self.cancel.clone(), self.tls.clone());
        runtime().spawn(async move {
            if let Err(e) = cancel.cancel_query(tls).await {
                tracing::debug!(error = %e, "cancelling an abandoned version read");
            }
            drop(client);
        });
    }
}

impl BulkReads {
    pub(super) fn new(pool: Pool, tls: MakeRustlsConnect) -> Self {
        Self { pool, tls }
    }

    /// Runs `sql` with `params` on a bulk connection on the bulk thread, and answers what
    /// `decode` makes of its rows (decoded there too).
    pub(super) async fn query<T, D>(
        &self,
        sql: String,
        params: Vec<OwnedParam>,
        decode: D,
    ) -> StoreResult<T>
    where
        T: Send + 'static,
        D: FnOnce(Vec<Row>) -> StoreResult<T> + Send + 'static,
    {
        let (pool, tls) = (self.pool.clone(), self.tls.clone());
        self.run(async move {
            let client = pool.get().await.map_err(pool_error)?;
            let mut reading = Reading {
                cancel: client.cancel_token(),
                client: Some(client),
                tls,
                finished: false,
            };
            let client = reading.client.as_ref().expect("checked out");
            let refs: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let rows = async {
                let stmt = client.prepare_cached(&sql).await?;
                client.query(&stmt, &refs).await
            }
            .await;
            // Answered, rows or error: the connection is fit to go back.
            reading.finished = true;
            decode(rows.map_err(unavailable)?)
        })
        .await
    }

    /// Runs `read` on the bulk thread, and answers what it answers; dropped, it stops `read`
    /// there.
    async fn run<T, Fut>(&self, read: Fut) -> StoreResult<T>
    where
        T: Send + 'static,
        Fut: Future<Output = StoreResult<T>> + Send + 'static,
    {
        let task = runtime().spawn(read);
        let _abort = AbortOnDrop(task.abort_handle());
        task.await
            .map_err(|e| StoreError::Unavailable(format!("a bulk read failed: {e}")))?
    }
}
