//! Which handler answers a request, by method and path.

use std::sync::Arc;

use hyper::body::{Body as _, Incoming};
use hyper::{Method, Request, Response};

use super::caller::client_addr;
use super::error::method_not_allowed;
use super::files::versions;
use super::upgrade::upgrade;
use super::{accounts, app, assets, files, ops, server, webhooks, ApiError, ApiResult, Body};
use crate::ids::FileId;
use crate::state::AppState;

fn file_id(segment: &str) -> Result<FileId, ApiError> {
    FileId::parse(segment)
        .ok_or_else(|| ApiError::bad_request("a file id must match [A-Za-z0-9_-]{1,64}"))
}

pub(super) async fn route(state: &Arc<AppState>, req: Request<Incoming>) -> ApiResult {
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = req.method().clone();
    match (&method, segments.as_slice()) {
        (&Method::GET, [""]) => paced_static(state, &req, assets::index(&req)),
        (&Method::GET, ["assets", rest @ ..]) => {
            paced_static(state, &req, assets::serve(&req, rest)?)
        }
        (_, ["assets", ..]) => Err(method_not_allowed()),
        (&Method::GET, ["health"]) => ops::health(state, req).await,
        (&Method::GET, ["ready"]) => ops::ready(state).await,
        (&Method::GET, ["metrics"]) if state.config.admin_bind.is_none() => {
            ops::admin_metrics(state, &req).await
        }
        (&Method::POST, ["api", "signup"]) => accounts::signup(state, req).await,
        (&Method::POST, ["api", "signin"]) => accounts::signin(state, req).await,
        (&Method::POST, ["api", "signout"]) => accounts::signout(state, req).await,
        (&Method::POST, ["api", "signout", "all"]) => accounts::signout_all(state, req).await,
        (&Method::GET, ["api", "me"]) => accounts::me(state, req).await,
        (&Method::POST, ["api", "admin", "api-keys"]) => app::create_key(state, req).await,
        (&Method::GET, ["api", "admin", "api-keys"]) => app::list_keys(state, req).await,
        (&Method::DELETE, ["api", "admin", "api-keys", id]) => {
            let id = (*id).to_owned();
            app::delete_key(state, req, &id).await
        }
        (_, ["api", "admin", "api-keys", _]) => Err(method_not_allowed()),
        (&Method::POST, ["api", "app", "revoke"]) => app::revoke(state, req).await,
        (&Method::GET, ["api", "files"]) => files::list(state, req).await,
        (&Method::POST, ["api", "files"]) => files::create(state, req).await,
        (_, ["api", "files", id]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => files::get(state, req, id).await,
                Method::PATCH => files::update(state, req, id).await,
                Method::DELETE => files::delete(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "doc"]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => files::doc(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "versions"]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => versions::list(state, req, id).await,
                Method::POST => versions::name(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "versions", "compare"]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => versions::compare(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "versions", vid]) => {
            let (id, vid) = (file_id(id)?, versions::version_id(vid)?);
            match method {
                Method::GET => versions::read(state, req, id, vid).await,
                Method::PATCH => versions::rename(state, req, id, vid).await,
                Method::DELETE => versions::delete(state, req, id, vid).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "versions", vid, "restore"]) => {
            let (id, vid) = (file_id(id)?, versions::version_id(vid)?);
            match method {
                Method::POST => versions::restore(state, req, id, vid).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "keys"]) => {
            let id = file_id(id)?;
            match method {
                Method::POST => files::rotate_keys(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "patches"]) => {
            let id = file_id(id)?;
            match method {
                Method::POST => server::apply_patch(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "people"]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => server::people(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "kick"]) => {
            let id = file_id(id)?;
            match method {
                Method::POST => server::kick(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "events"]) => {
            let id = file_id(id)?;
            match method {
                Method::POST => server::send_event(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (&Method::POST, ["api", "server", "files"]) => server::create_file(state, req).await,
        (&Method::GET, ["api", "server", "files"]) => server::list_files(state, req).await,
        (&Method::DELETE, ["api", "server", "files"]) => server::delete_files(state, req).await,
        (&Method::GET, ["api", "server", "rooms"]) => server::rooms(state, req).await,
        (_, ["files", id, "ws"]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => upgrade(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (&Method::GET, ["api", "webhooks"]) => webhooks::list(state, req).await,
        (&Method::POST, ["api", "webhooks"]) => webhooks::create(state, req).await,
        (_, ["api", "webhooks", id]) => {
            let id = (*id).to_owned();
            match method {
                Method::GET => webhooks::get(state, req, &id).await,
                Method::PATCH => webhooks::update(state, req, &id).await,
                Method::DELETE => webhooks::delete(state, req, &id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (&Method::GET, ["api", "openapi.yaml"]) => paced_static(state, &req, ops::openapi()),
        // With an admin address, /metrics is not a route here at all.
        (_, ["metrics"]) if state.config.admin_bind.is_some() => Err(ApiError::not_found()),
        (_, path) if KNOWN.contains(&path) => Err(method_not_allowed()),
        _ => Err(ApiError::not_found()),
    }
}

/// The page, its assets and the API's description are sent from the client address's share
/// of document bytes (`ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND`), as downloads are: the
/// 100 KB description asked for in a loop was 2,500 bytes out for each byte in, paced only
/// by the request rate. A 304 costs nothing.
fn paced_static(state: &AppState, req: &Request<Incoming>, resp: Response<Body>) -> ApiResult {
    let bytes = resp.body().size_hint().exact().unwrap_or(0);
    if bytes == 0 {
        return Ok(resp);
    }
    let address = crate::limits::address_key(client_addr(req));
    state.documents_sent.ready(&address).map_err(|wait| {
        files::paced(
            state,
            "this address was sent its share of downloads for now; try again later",
            wait,
        )
    })?;
    state.documents_sent.charge(&address, bytes);
    Ok(resp)
}

/// Routes that exist for some method: another method gets 405, not 404.
const KNOWN: &[&[&str]] = &[
    &[""],
    &["health"],
    &["ready"],
    &["metrics"],
    &["api", "signup"],
    &["api", "signin"],
    &["api", "signout"],
    &["api", "signout", "all"],
    &["api", "me"],
    &["api", "admin", "api-keys"],
    &["api", "app", "revoke"],
    &["api", "files"],
    &["api", "openapi.yaml"],
    &["api", "server", "files"],
    &["api", "server", "rooms"],
    &["api", "webhooks"],
];
