//! Webhook endpoints and the outbox on SQLite.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::rows::{unavailable, unique_or_unavailable};
use super::SqliteStore;
use crate::store::{
    DueQuery, StoreError, StoreResult, Trimmed, WebhookEndpoint, WebhookEvent, WebhookMessage,
    WebhookStore, WebhookUpdate, DROP_ORDER,
};

const ENDPOINT_COLUMNS: &str = "id, url, secret, events, enabled, description, created_at";

fn endpoint_from(r: &Row<'_>) -> rusqlite::Result<WebhookEndpoint> {
    let events: String = r.get(3)?;
    Ok(WebhookEndpoint {
        id: r.get(0)?,
        url: r.get(1)?,
        secret: r.get(2)?,
        events: WebhookEndpoint::events_from_column(&events),
        enabled: r.get::<_, i64>(4)? != 0,
        description: r.get(5)?,
        created_at: r.get(6)?,
    })
}

/// Records one event for every enabled endpoint that wants it; a waiting
/// `file.updated` of the same file is updated in place (the debounce).
const RECORD_SQL: &str = "
    INSERT INTO webhook_outbox (endpoint_id, file_id, kind, msg_id, body, created_at, next_at)
    SELECT id, ?1, ?2, ?3, ?4, ?5, ?5 FROM webhook_endpoints
    WHERE enabled <> 0 AND events LIKE '%,' || ?2 || ',%'
    ON CONFLICT (endpoint_id, file_id) WHERE kind = 'file.updated' AND state = 0
    DO UPDATE SET msg_id = excluded.msg_id, body = excluded.body,
                  seq = webhook_outbox.seq + 1";

/// Records events inside an open transaction (the journal's, for `file.updated`).
pub(super) fn record(conn: &Connection, events: &[WebhookEvent]) -> StoreResult<u64> {
    let mut stmt = conn.prepare_cached(RECORD_SQL).map_err(unavailable)?;
    let mut made = 0;
    for e in events {
        made += stmt
            .execute(params![e.file.as_str(), e.kind, e.msg_id, e.body, e.at])
            .map_err(unavailable)? as u64;
    }
    Ok(made)
}

fn insert(c: &Connection, e: &WebhookEndpoint, replace: bool) -> StoreResult<()> {
    let verb = if replace {
        "INSERT OR REPLACE"
    } else {
        "INSERT"
    };
    c.execute(
        &format!("{verb} INTO webhook_endpoints ({ENDPOINT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        params![
            e.id,
            e.url,
            e.secret,
            e.events_column(),
            e.enabled as i64,
            e.description,
            e.created_at
        ],
    )
    .map_err(|e| unique_or_unavailable(e, StoreError::Conflict))?;
    Ok(())
}

/// Whether any endpoint is enabled.
pub(super) fn any_enabled(c: &Connection) -> StoreResult<bool> {
    c.query_row(
        "SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled <> 0)",
        [],
        |r| r.get(0),
    )
    .map_err(unavailable)
}

impl SqliteStore {
    /// Runs a change of endpoints, then sets whether any is enabled (for the journal).
    async fn change<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let on = self.webhooks_on.clone();
        self.run(move |c| {
            let result = f(c);
            if let Ok(any) = any_enabled(c) {
                on.store(any, std::sync::atomic::Ordering::Release);
            }
            result
        })
        .await
    }
}

/// Writes every field of an existing endpoint; how many rows that was (0: none by its id).
fn update_row(c: &Connection, e: &WebhookEndpoint) -> StoreResult<usize> {
    c.execute(
        "UPDATE webhook_endpoints SET url = ?2, secret = ?3, events = ?4, enabled = ?5,
             description = ?6 WHERE id = ?1",
        params![
            e.id,
            e.url,
            e.secret,
            e.events_column(),
            e.enabled as i64,
            e.description
        ],
    )
    .map_err(unavailable)
}

fn endpoint(c: &Connection, id: &str) -> StoreResult<WebhookEndpoint> {
    c.query_row(
        &format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?1"),
        [id],
        endpoint_from,
    )
    .optional()
    .map_err(unavailable)?
    .ok_or(StoreError::NotFound)
}

#[async_trait]
impl WebhookStore for SqliteStore {
    async fn create_webhook(&self, endpoint: &WebhookEndpoint, max: u64) -> StoreResult<()> {
        let e = endpoint.clone();
        self.change(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            let n: i64 = tx
                .query_row("SELECT count(*) FROM webhook_endpoints", [], |r| r.get(0))
                .map_err(unavailable)?;
            if n as u64 >= max {
                return Err(StoreError::Full);
            }
            insert(&tx, &e, false)?;
            tx.commit().map_err(unavailable)
        })
        .await
    }

    async fn put_webhook(&self, endpoint: &WebhookEndpoint) -> StoreResult<()> {
        let e = endpoint.clone();
        // An UPDATE first: a REPLACE would delete the row, and its outbox with it.
        self.change(move |c| {
            if update_row(c, &e)? == 0 {
                insert(c, &e, true)?;
            }
            Ok(())
        })
        .await
    }

    async fn webhooks(&self) -> StoreResult<Vec<WebhookEndpoint>> {
        self.read(|c| {
            let mut stmt = c
                .prepare(&format!(
                    "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, id"
                ))
                .map_err(unavailable)?;
            let rows = stmt.query_map([], endpoint_from).map_err(unavailable)?;
            rows.map(|r| r.map_err(unavailable)).collect()
        })
        .await
    }

    async fn update_webhook(
        &self,
        id: &str,
        update: WebhookUpdate,
    ) -> StoreResult<WebhookEndpoint> {
        let id = id.to_owned();
        self.change(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            let mut e = endpoint(&tx, &id)?;
            update.apply_to(&mut e);
            update_row(&tx, &e)?;
            tx.commit().map_err(unavailable)?;
            Ok(e)
        })
        .await
    }

    async fn delete_webhook(&self, id: &str) -> StoreResult<()> {
        let id = id.to_owned();
        let n = self
            .run(move |c| {
                let tx = c.transaction().map_err(unavailable)?;
                tx.execute("DELETE FROM webhook_outbox WHERE endpoint_id = ?1", [&id])
                    .map_err(unavailable)?;
                let n = tx
                    .execute("DELETE FROM webhook_endpoints WHERE id = ?1", [&id])
                    .map_err(unavailable)?;
                tx.commit().map_err(unavailable)?;
                Ok(n)
            })
            .await?;
        if n == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn record_webhooks(&self, events: &[WebhookEvent]) -> StoreResult<u64> {
        if events.is_empty() {
            return Ok(0);
        }
        let events = events.to_vec();
        self.change(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            let made = record(&tx, &events)?;
            tx.commit().map_err(unavailable)?;
            Ok(made)
        })
        .await
    }

    async fn due_webhooks(&self, q: DueQuery) -> StoreResult<Vec<WebhookMessage>> {
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT o.id, o.seq, o.endpoint_id, e.url, e.secret, o.file_id, o.kind,
                            o.msg_id, o.body, o.created_at, o.attempts
                     FROM webhook_outbox o JOIN webhook_endpoints e ON e.id = o.endpoint_id
                     WHERE o.state = 0 AND e.enabled <> 0 AND o.next_at <= ?1
                       AND (o.kind <> 'file.updated' OR o.created_at <= ?1 - ?2)
                       AND NOT EXISTS (
                           SELECT 1 FROM webhook_outbox i
                           WHERE i.endpoint_id = o.endpoint_id AND i.file_id = o.file_id
                             AND i.state = 0
                             AND (i.created_at < o.created_at
                                  OR (i.created_at = o.created_at AND i.id < o.id)))
                     ORDER BY o.next_at, o.created_at, o.id LIMIT ?3",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![q.now, q.debounce_ms, q.limit], |r| {
                    Ok(WebhookMessage {
                        id: r.get(0)?,
                        seq: r.get(1)?,
                        endpoint: r.get(2)?,
                        url: r.get(3)?,
                        secret: r.get(4)?,
                        file: r.get(5)?,
                        kind: r.get(6)?,
                        msg_id: r.get(7)?,
                        body: r.get(8)?,
                        created_at: r.get(9)?,
                        attempts: r.get(10)?,
                    })
                })
                .map_err(unavailable)?;
            rows.map(|r| r.map_err(unavailable)).collect()
        })
        .await
    }

    async fn webhook_delivered(&self, id: i64, seq: i64) -> StoreResult<bool> {
        let now = super::now_ms();
        self.run(move |c| {
            let deleted = c
                .execute(
                    "DELETE FROM webhook_outbox WHERE id = ?1 AND seq = ?2",
                    params![id, seq],
                )
                .map_err(unavailable)?;
            if deleted == 0 {
                // Updated while it was sent: its debounce starts again.
                c.execute(
                    "UPDATE webhook_outbox SET created_at = ?2 WHERE id = ?1",
                    params![id, now],
                )
                .map_err(unavailable)?;
            }
            Ok(deleted > 0)
        })
        .await
    }

    async fn webhook_retry(&self, id: i64, next_at: i64) -> StoreResult<()> {
        self.run(move |c| {
            c.execute(
                "UPDATE webhook_outbox SET attempts = attempts + 1, next_at = ?2 WHERE id = ?1",
                params![id, next_at],
            )
            .map(drop)
            .map_err(unavailable)
        })
        .await
    }

    async fn webhook_failed(&self, id: i64) -> StoreResult<()> {
        self.run(move |c| {
            c.execute(
                "UPDATE webhook_outbox SET attempts = attempts + 1, state = 1 WHERE id = ?1",
                [id],
            )
            .map(drop)
            .map_err(unavailable)
        })
        .await
    }

    async fn trim_webhooks(
        &self,
        max_per_endpoint: u64,
        failed_before: i64,
    ) -> StoreResult<Trimmed> {
        self.run(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            let expired = tx
                .execute(
                    "DELETE FROM webhook_outbox WHERE state = 1 AND created_at < ?1",
                    [failed_before],
                )
                .map_err(unavailable)? as u64;
            let over: Vec<(String, i64)> = {
                let mut stmt = tx
                    .prepare(
                        "SELECT endpoint_id, count(*) FROM webhook_outbox
                         GROUP BY endpoint_id HAVING count(*) > ?1",
                    )
                    .map_err(unavailable)?;
                let rows = stmt
                    .query_map([max_per_endpoint as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(unavailable)?;
                rows.collect::<rusqlite::Result<_>>().map_err(unavailable)?
            };
            let mut dropped = 0;
            for (endpoint, count) in over {
                dropped += tx
                    .execute(
                        &format!(
                            "DELETE FROM webhook_outbox WHERE id IN (
                                 SELECT id FROM webhook_outbox WHERE endpoint_id = ?1
                                 ORDER BY {DROP_ORDER} LIMIT ?2)"
                        ),
                        params![endpoint, count - max_per_endpoint as i64],
                    )
                    .map_err(unavailable)? as u64;
            }
            tx.commit().map_err(unavailable)?;
            Ok(Trimmed { dropped, expired })
        })
        .await
    }

    async fn webhook_depth(&self) -> StoreResult<(u64, u64)> {
        self.read(|c| {
            c.query_row(
                "SELECT coalesce(sum(state = 0), 0), coalesce(sum(state = 1), 0)
                 FROM webhook_outbox",
                [],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .map_err(unavailable)
        })
        .await
    }
}
