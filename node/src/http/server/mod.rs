//! The server API: what the app's own backend does with an API key of scope `server`
//! (`docs/server-api.md`). Patches through the file's room (`patches`), files with the
//! app's own ids (`files`), who is in a room and removing them (`people`), broadcast
//! events (`events`), and the rooms open on the fleet (`rooms`).

mod events;
mod files;
mod patches;
mod people;
mod rooms;

pub use events::send as send_event;
pub use files::{create as create_file, delete as delete_files, list as list_files};
pub use patches::apply as apply_patch;
pub use people::{kick, list as people};
pub use rooms::list as rooms;

use hyper::body::Incoming;
use hyper::Request;

use super::app::api_key;
use super::files::served_here;
use super::ApiError;
use crate::ids::FileId;
use crate::state::AppState;
use crate::store::{ApiKey, FileRecord};

/// The request's API key, with scope `server`, within its rate (429 beyond it).
async fn server_key(state: &AppState, req: &Request<Incoming>) -> Result<ApiKey, ApiError> {
    api_key(state, req, "server").await
}

/// The file (404 without it), served here (409 `moved` when another node holds it).
async fn file_here(state: &AppState, id: &FileId) -> Result<FileRecord, ApiError> {
    let file = state.store.file(id).await?;
    served_here(state, id).await?;
    Ok(file)
}

/// A query parameter's value (the first of its name), percent-decoding nothing: every
/// parameter here is an id or a number.
fn query<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.uri().query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then_some(v)
    })
}

/// `limit` from the query: 1 to `most`, `default` when absent.
fn limit(req: &Request<Incoming>, default: usize, most: usize) -> Result<usize, ApiError> {
    match query(req, "limit") {
        None => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| ApiError::bad_request(format!("`limit` is 1 to {most}"))),
    }
}

/// An id from the query (`after`, `prefix`): `None` when absent, 400 when not an id.
fn query_id<'a>(req: &'a Request<Incoming>, name: &str) -> Result<Option<&'a str>, ApiError> {
    match query(req, name) {
        None => Ok(None),
        Some(v) if crate::ids::is_valid_id(v) => Ok(Some(v)),
        Some(_) => Err(ApiError::bad_request(format!(
            "`{name}` must match [A-Za-z0-9_-]{{1,64}}"
        ))),
    }
}
