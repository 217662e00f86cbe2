//! Versions in a store: saving one (as a base or a delta), reading one back, dropping one
//! (its delta folded into the next), and thinning a file's history with age.
//!
//! Writes are made by the file's room only, one at a time (its history worker), and fenced
//! by the room's epoch like every other durable write of the file.

use super::codec::{deflate, delta, inflate, materialize, materialize_measured, merge_deltas};
use super::entries::charged_len;
use super::retention::{thinned, Retention};
use super::{VersionData, VersionInfo};
use crate::ids::FileId;
use crate::store::{Store, StoreError, StoreResult};

/// How versions are stored and kept.
#[derive(Debug, Clone, Copy)]
pub struct HistoryRules {
    /// A base is written at least every this many versions.
    pub base_every: u64,
    pub retention: Retention,
    /// The largest document: no stored version inflates past it.
    pub max_doc_bytes: usize,
}

impl Default for HistoryRules {
    fn default() -> Self {
        Self {
            base_every: 32,
            retention: Retention::default(),
            max_doc_bytes: 64 * 1024 * 1024,
        }
    }
}

fn corrupt(e: String) -> StoreError {
    StoreError::Unavailable(e)
}

/// Saves `doc` (compact JSON) as the file's next version, described by `info` (its id and
/// size are filled in): a delta against the newest version, or a base when the chain since
/// the last base is long or heavy enough. Fenced by `epoch`.
pub async fn save(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    doc: &str,
    info: VersionInfo,
    rules: &HistoryRules,
) -> StoreResult<VersionInfo> {
    let newest = newest_chain(store, file).await?;
    let (data, measured) = encode(&newest, doc, rules).map_err(corrupt)?;
    insert(store, file, epoch, info, &data, measured).await
}

/// A version encoded for storing: its row, and its document's size as the document
/// limits count it.
pub struct Encoded {
    pub data: VersionData,
    pub doc_bytes: usize,
}

/// The encoding half of [`save`] for a room's history worker: the rebuilding and diffing,
/// milliseconds per megabyte, run on the bulk lane rather than on the runtime's workers.
/// What is stored is known only now, so the worker checks its size before [`store_encoded`].
pub async fn encode_on_lane(
    store: &dyn Store,
    file: &FileId,
    doc: String,
    rules: &HistoryRules,
    metrics: &crate::metrics::Metrics,
) -> StoreResult<Encoded> {
    let newest = newest_chain(store, file).await?;
    let rules = *rules;
    let (data, doc_bytes) =
        crate::lane::run(doc.len(), metrics, move || encode(&newest, &doc, &rules))
            .await
            .map_err(corrupt)?;
    Ok(Encoded { data, doc_bytes })
}

/// Stores a version [`encode_on_lane`] encoded, fenced by `epoch`.
pub async fn store_encoded(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    info: VersionInfo,
    encoded: &Encoded,
) -> StoreResult<VersionInfo> {
    insert(store, file, epoch, info, &encoded.data, encoded.doc_bytes).await
}

/// The stored rows of the file's newest version, base first (none for a file without
/// versions, or whose newest chain has a row saved before rows kept their document's size:
/// the next version is then a base, so that every version saved from now on is planned,
/// and charged before its work, by kept sizes rather than an estimate a delta of very
/// compressible text could fool).
async fn newest_chain(store: &dyn Store, file: &FileId) -> StoreResult<Vec<VersionData>> {
    let Some(last) = store.versions(file, None, 1).await?.into_iter().next() else {
        return Ok(Vec::new());
    };
    let chain = store.version_chain(file, last.id).await?;
    if chain.iter().any(|(info, _)| info.doc_bytes.is_none()) {
        return Ok(Vec::new());
    }
    Ok(chain.into_iter().map(|(_, d)| d).collect())
}

/// What to store for `doc` after the chain `newest` (a delta while the chain is short and
/// its deltas weigh less than its base, else a base), and the document's size as the
/// document limits count it.
fn encode(
    newest: &[VersionData],
    doc: &str,
    rules: &HistoryRules,
) -> Result<(VersionData, usize), String> {
    let measured = charged_len(doc)?;
    if !newest.is_empty() && (newest.len() as u64) < rules.base_every.max(1) {
        let previous = materialize(newest, rules.max_doc_bytes)?;
        let d = deflate(&delta(&previous, doc)?);
        let base = newest.first().map_or(0, VersionData::len);
        let deltas: usize = newest.iter().skip(1).map(VersionData::len).sum();
        if deltas + d.len() <= base {
            return Ok((VersionData::Delta(d), measured));
        }
    }
    Ok((VersionData::Base(deflate(doc)), measured))
}

async fn insert(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    mut info: VersionInfo,
    data: &VersionData,
    measured: usize,
) -> StoreResult<VersionInfo> {
    info.bytes = data.len() as u64;
    info.doc_bytes = Some(measured as u64);
    info.id = store.insert_version(file, epoch, &info, data).await?;
    Ok(info)
}

/// A version and its document (compact JSON).
pub async fn read(
    store: &dyn Store,
    file: &FileId,
    id: u64,
    rules: &HistoryRules,
) -> StoreResult<(VersionInfo, String)> {
    let (info, rows) = chain_of(store, file, id).await?;
    let doc = materialize(&rows, rules.max_doc_bytes).map_err(corrupt)?;
    Ok((info, doc))
}

/// A version's description and the stored rows it is rebuilt from, base first.
async fn chain_of(
    store: &dyn Store,
    file: &FileId,
    id: u64,
) -> StoreResult<(VersionInfo, Vec<VersionData>)> {
    let chain = store.version_chain(file, id).await?;
    let info = chain.last().ok_or(StoreError::NotFound)?.0.clone();
    Ok((info, chain.into_iter().map(|(_, d)| d).collect()))
}

/// A version as stored: its description and the rows it is rebuilt from, read before the
/// work on it is planned.
pub struct Stored {
    pub info: VersionInfo,
    rows: Vec<VersionData>,
    /// The largest document among the versions of its chain (each row's kept size), when
    /// every row keeps one: a version after a document shrank is rebuilt from a base, and
    /// through deltas, as large as the document was.
    pub largest: Option<usize>,
}

/// About how many bytes of document a stored byte of a version rebuilds to: they are
/// compressed.
pub const REBUILT_PER_STORED: usize = 8;

impl Stored {
    /// About how many bytes of document rebuilding it takes: its chain's largest document,
    /// when every row keeps its size; else (a version saved before rows kept it) an
    /// estimate from the bytes its rows store, at most `most`. What its work is charged
    /// before it runs, settled at what it took.
    pub fn likely_size(&self, most: usize) -> usize {
        self.largest.unwrap_or_else(|| {
            let stored: usize = self.rows.iter().map(VersionData::len).sum();
            stored.saturating_mul(REBUILT_PER_STORED).min(most)
        })
    }
}

/// Version `id` of `file` as stored (`NotFound` without it).
pub async fn stored(store: &dyn Store, file: &FileId, id: u64) -> StoreResult<Stored> {
    let chain = store.version_chain(file, id).await?;
    let info = chain.last().ok_or(StoreError::NotFound)?.0.clone();
    let largest = chain
        .iter()
        .map(|(i, _)| i.doc_bytes.and_then(|n| usize::try_from(n).ok()))
        .try_fold(0usize, |most, n| n.map(|n| most.max(n)));
    let rows = chain.into_iter().map(|(_, d)| d).collect();
    Ok(Stored {
        info,
        rows,
        largest,
    })
}

/// A stored version's document, rebuilt within `limit` bytes of document (over it, an
/// error) on the bulk lane: a version of a large file takes milliseconds per megabyte to
/// rebuild, which the runtime's workers must not spend.
pub async fn rebuild_within(
    stored: Stored,
    limit: usize,
    metrics: &crate::metrics::Metrics,
) -> StoreResult<(VersionInfo, String, usize)> {
    let Stored { info, rows, .. } = stored;
    // Stored versions are compressed: they rebuild to several times what they store.
    let compressed: usize = rows.iter().map(VersionData::len).sum();
    let rebuilt = crate::lane::run(
        compressed.saturating_mul(REBUILT_PER_STORED),
        metrics,
        move || materialize_measured(&rows, limit),
    )
    .await;
    let (doc, charged) = rebuilt.map_err(corrupt)?;
    Ok((info, doc, charged))
}

/// Drops a version, folding what it stores into the version after it: its delta merged
/// into the next delta, or, when it was a base, the next version made a base. Fenced.
pub async fn remove(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    id: u64,
    rules: &HistoryRules,
) -> StoreResult<()> {
    let next = store.version_after(file, id).await?;
    let replacement = match next {
        None | Some((_, VersionData::Base(_))) => None,
        Some((next, VersionData::Delta(next_delta))) => {
            let chain = store.version_chain(file, id).await?;
            let data = match chain.last() {
                Some((_, VersionData::Delta(mine))) => {
                    let limit = rules.max_doc_bytes;
                    let (mine, theirs) = (inflate(mine, limit), inflate(&next_delta, limit));
                    let merged = merge_deltas(&mine.map_err(corrupt)?, &theirs.map_err(corrupt)?);
                    VersionData::Delta(deflate(&merged.map_err(corrupt)?))
                }
                Some((_, VersionData::Base(_))) => {
                    let mut rows: Vec<VersionData> = chain.into_iter().map(|(_, d)| d).collect();
                    rows.push(VersionData::Delta(next_delta));
                    let doc = materialize(&rows, rules.max_doc_bytes).map_err(corrupt)?;
                    VersionData::Base(deflate(&doc))
                }
                None => return Err(StoreError::NotFound),
            };
            Some((next.id, data))
        }
    };
    store.drop_version(file, epoch, id, replacement).await
}

/// Applies the retention policy at `now` (Unix ms); answers how many versions it dropped.
pub async fn thin(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    now: i64,
    rules: &HistoryRules,
) -> StoreResult<usize> {
    let all = store.version_ages(file).await?;
    let drop = thinned(&all, now, &rules.retention);
    for id in &drop {
        remove(store, file, epoch, *id, rules).await?;
    }
    Ok(drop.len())
}

/// The version a [`VersionInfo`] for a new version starts from.
pub fn new_info(
    version: u64,
    created_at: i64,
    kind: super::VersionKind,
    editors: Vec<String>,
) -> VersionInfo {
    VersionInfo {
        id: 0,
        version,
        created_at,
        kind,
        title: None,
        description: None,
        editors,
        restored_from: None,
        bytes: 0,
        doc_bytes: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_without_kept_sizes_is_likely_as_large_as_its_rows_rebuild_to() {
        let doc = serde_json::json!({"a": {"text": "x".repeat(4000)}}).to_string();
        let row = VersionData::Base(deflate(&doc));
        let stored_bytes = row.len();
        let info = new_info(1, 0, crate::history::VersionKind::Named, vec![]);
        let legacy = Stored {
            info: info.clone(),
            rows: vec![row.clone()],
            largest: None,
        };
        assert!(
            stored_bytes * REBUILT_PER_STORED < doc.len(),
            "compressed well"
        );
        assert_eq!(
            legacy.likely_size(1 << 20),
            stored_bytes * REBUILT_PER_STORED
        );
        assert_eq!(legacy.likely_size(100), 100, "at most the document limit");
        let kept = Stored {
            info,
            rows: vec![row],
            largest: Some(doc.len()),
        };
        assert_eq!(kept.likely_size(100), doc.len(), "a kept size is the size");
    }
}
