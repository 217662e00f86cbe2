//! Webhook endpoints and the outbox on Postgres.

use async_trait::async_trait;
use deadpool_postgres::Transaction;
use tokio_postgres::Row;

use super::rows::{get, insert_error, unavailable};
use super::{Param, PgStore};
use crate::store::{
    DueQuery, StoreError, StoreResult, Trimmed, WebhookEndpoint, WebhookEvent, WebhookMessage,
    WebhookStore, WebhookUpdate, DROP_ORDER, FILE_UPDATED,
};

const ENDPOINT_COLUMNS: &str = "id, url, secret, events, enabled, description, created_at";

fn endpoint_from(r: &Row) -> StoreResult<WebhookEndpoint> {
    let events: String = get(r, 3)?;
    Ok(WebhookEndpoint {
        id: get(r, 0)?,
        url: get(r, 1)?,
        secret: get(r, 2)?,
        events: WebhookEndpoint::events_from_column(&events),
        enabled: get(r, 4)?,
        description: get(r, 5)?,
        created_at: get(r, 6)?,
    })
}

/// Records events (in their order) for every enabled endpoint that wants them; a waiting
/// `file.updated` of the same file is updated in place (the debounce).
const RECORD_SQL: &str = "
    INSERT INTO webhook_outbox (endpoint_id, file_id, kind, msg_id, body, created_at, next_at)
    SELECT e.id, v.file_id, v.kind, v.msg_id, v.body, v.at, v.at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
         WITH ORDINALITY AS v(file_id, kind, msg_id, body, at, n)
    JOIN webhook_endpoints e ON e.enabled AND e.events LIKE '%,' || v.kind || ',%'
    ORDER BY v.n, e.id
    ON CONFLICT (endpoint_id, file_id) WHERE kind = 'file.updated' AND state = 0
    DO UPDATE SET msg_id = excluded.msg_id, body = excluded.body,
                  seq = webhook_outbox.seq + 1";

/// Records events inside an open transaction (the journal's, for `file.updated`).
pub(super) async fn record(tx: &Transaction<'_>, events: &[WebhookEvent]) -> StoreResult<u64> {
    // One statement may not update a row twice: of a file's `file.updated`s, the last.
    let mut kept: Vec<&WebhookEvent> = Vec::with_capacity(events.len());
    for e in events {
        if e.kind == FILE_UPDATED {
            if let Some(i) = kept
                .iter()
                .position(|k| k.kind == FILE_UPDATED && k.file == e.file)
            {
                kept.remove(i);
            }
        }
        kept.push(e);
    }
    if kept.is_empty() {
        return Ok(0);
    }
    let files: Vec<&str> = kept.iter().map(|e| e.file.as_str()).collect();
    let kinds: Vec<&str> = kept.iter().map(|e| e.kind).collect();
    let ids: Vec<&str> = kept.iter().map(|e| e.msg_id.as_str()).collect();
    let bodies: Vec<&str> = kept.iter().map(|e| e.body.as_str()).collect();
    let ats: Vec<i64> = kept.iter().map(|e| e.at).collect();
    let stmt = tx.prepare_cached(RECORD_SQL).await.map_err(unavailable)?;
    tx.execute(&stmt, &[&files, &kinds, &ids, &bodies, &ats])
        .await
        .map_err(unavailable)
}

impl PgStore {
    async fn insert_endpoint(&self, e: &WebhookEndpoint, upsert: bool) -> StoreResult<()> {
        let conflict = if upsert {
            " ON CONFLICT (id) DO UPDATE SET url = excluded.url, secret = excluded.secret,
                 events = excluded.events, enabled = excluded.enabled,
                 description = excluded.description"
        } else {
            ""
        };
        let sql = format!(
            "INSERT INTO webhook_endpoints ({ENDPOINT_COLUMNS})
             VALUES ($1, $2, $3, $4, $5, $6, $7){conflict}"
        );
        let events = e.events_column();
        let params: [&Param<'_>; 7] = [
            &e.id,
            &e.url,
            &e.secret,
            &events,
            &e.enabled,
            &e.description,
            &e.created_at,
        ];
        self.execute(&sql, &params, insert_error).await.map(drop)
    }
}

#[async_trait]
impl WebhookStore for PgStore {
    async fn create_webhook(&self, endpoint: &WebhookEndpoint, max: u64) -> StoreResult<()> {
        // A soft cap: two nodes creating at once may pass it by one each.
        let n: i64 = get(
            &self
                .query_found("SELECT count(*) FROM webhook_endpoints", &[])
                .await?,
            0,
        )?;
        if n as u64 >= max {
            return Err(StoreError::Full);
        }
        self.insert_endpoint(endpoint, false).await
    }

    async fn put_webhook(&self, endpoint: &WebhookEndpoint) -> StoreResult<()> {
        self.insert_endpoint(endpoint, true).await
    }

    async fn webhooks(&self) -> StoreResult<Vec<WebhookEndpoint>> {
        let sql =
            format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, id");
        self.query(&sql, &[])
            .await?
            .iter()
            .map(endpoint_from)
            .collect()
    }

    async fn update_webhook(
        &self,
        id: &str,
        update: WebhookUpdate,
    ) -> StoreResult<WebhookEndpoint> {
        let events = update.events.map(|events| {
            WebhookEndpoint {
                events,
                ..placeholder()
            }
            .events_column()
        });
        let sql = format!(
            "UPDATE webhook_endpoints SET url = coalesce($2, url), secret = coalesce($3, secret),
                 events = coalesce($4, events), enabled = coalesce($5, enabled),
                 description = coalesce($6, description)
             WHERE id = $1 RETURNING {ENDPOINT_COLUMNS}"
        );
        let params: [&Param<'_>; 6] = [
            &id,
            &update.url,
            &update.secret,
            &events,
            &update.enabled,
            &update.description,
        ];
        endpoint_from(&self.query_found(&sql, &params).await?)
    }

    async fn delete_webhook(&self, id: &str) -> StoreResult<()> {
        // The outbox goes with it (ON DELETE CASCADE).
        let n = self
            .execute(
                "DELETE FROM webhook_endpoints WHERE id = $1",
                &[&id],
                unavailable,
            )
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
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let made = record(&tx, events).await?;
        tx.commit().await.map_err(unavailable)?;
        Ok(made)
    }

    async fn due_webhooks(&self, q: DueQuery) -> StoreResult<Vec<WebhookMessage>> {
        let sql = "SELECT o.id, o.seq, o.endpoint_id, e.url, e.secret, o.file_id, o.kind,
                          o.msg_id, o.body, o.created_at, o.attempts
                   FROM webhook_outbox o JOIN webhook_endpoints e ON e.id = o.endpoint_id
                   WHERE o.state = 0 AND e.enabled AND o.next_at <= $1
                     AND (o.kind <> 'file.updated' OR o.created_at <= $1 - $2)
                     AND NOT EXISTS (
                         SELECT 1 FROM webhook_outbox i
                         WHERE i.endpoint_id = o.endpoint_id AND i.file_id = o.file_id
                           AND i.state = 0
                           AND (i.created_at < o.created_at
                                OR (i.created_at = o.created_at AND i.id < o.id)))
                   ORDER BY o.next_at, o.created_at, o.id LIMIT $3";
        let rows = self.query(sql, &[&q.now, &q.debounce_ms, &q.limit]).await?;
        rows.iter()
            .map(|r| {
                Ok(WebhookMessage {
                    id: get(r, 0)?,
                    seq: get(r, 1)?,
                    endpoint: get(r, 2)?,
                    url: get(r, 3)?,
                    secret: get(r, 4)?,
                    file: get(r, 5)?,
                    kind: get(r, 6)?,
                    msg_id: get(r, 7)?,
                    body: get(r, 8)?,
                    created_at: get(r, 9)?,
                    attempts: i64::from(get::<i32>(r, 10)?),
                })
            })
            .collect()
    }

    async fn webhook_delivered(&self, id: i64, seq: i64) -> StoreResult<bool> {
        let n = self
            .execute(
                "DELETE FROM webhook_outbox WHERE id = $1 AND seq = $2",
                &[&id, &seq],
                unavailable,
            )
            .await?;
        if n == 0 {
            // Updated while it was sent: its debounce starts again.
            let now = super::now_ms();
            self.execute(
                "UPDATE webhook_outbox SET created_at = $2 WHERE id = $1",
                &[&id, &now],
                unavailable,
            )
            .await?;
        }
        Ok(n > 0)
    }

    async fn webhook_retry(&self, id: i64, next_at: i64) -> StoreResult<()> {
        self.execute(
            "UPDATE webhook_outbox SET attempts = attempts + 1, next_at = $2 WHERE id = $1",
            &[&id, &next_at],
            unavailable,
        )
        .await
        .map(drop)
    }

    async fn webhook_failed(&self, id: i64) -> StoreResult<()> {
        self.execute(
            "UPDATE webhook_outbox SET attempts = attempts + 1, state = 1 WHERE id = $1",
            &[&id],
            unavailable,
        )
        .await
        .map(drop)
    }

    async fn trim_webhooks(
        &self,
        max_per_endpoint: u64,
        failed_before: i64,
    ) -> StoreResult<Trimmed> {
        let expired = self
            .execute(
                "DELETE FROM webhook_outbox WHERE state = 1 AND created_at < $1",
                &[&failed_before],
                unavailable,
            )
            .await?;
        let max = max_per_endpoint as i64;
        let dropped = self
            .execute(
                &format!(
                    "DELETE FROM webhook_outbox WHERE id IN (
                         SELECT id FROM (
                             SELECT id,
                                    row_number() OVER (PARTITION BY endpoint_id ORDER BY {DROP_ORDER}) AS r,
                                    count(*) OVER (PARTITION BY endpoint_id) AS n
                             FROM webhook_outbox) ranked
                         WHERE r <= n - $1)"
                ),
                &[&max],
                unavailable,
            )
            .await?;
        Ok(Trimmed { dropped, expired })
    }

    async fn webhook_depth(&self) -> StoreResult<(u64, u64)> {
        let row = self
            .query_found(
                "SELECT count(*) FILTER (WHERE state = 0), count(*) FILTER (WHERE state = 1)
                 FROM webhook_outbox",
                &[],
            )
            .await?;
        Ok((get::<i64>(&row, 0)? as u64, get::<i64>(&row, 1)? as u64))
    }
}

/// An endpoint with nothing in it, to reuse how events are stored.
fn placeholder() -> WebhookEndpoint {
    WebhookEndpoint {
        id: String::new(),
        url: String::new(),
        secret: String::new(),
        events: Vec::new(),
        enabled: false,
        description: String::new(),
        created_at: 0,
    }
}
