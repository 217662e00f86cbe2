//! Who may do what to a file: the caller (account and link key, an app token, or the
//! app's server by an API key), reading by the link's rules, owning, and whether this node
//! serves the file.

use hyper::body::Incoming;
use hyper::Request;

use crate::apptoken::{is_app_token, AppClaims};
use crate::http::app::{api_key, KEY_PREFIX};
use crate::http::{app_account, app_claims, bearer_token, caller, ApiError};
use crate::ids::{AccountId, FileId};
use crate::limits::Party;
use crate::room::access::{self, Denied};
use crate::state::AppState;
use crate::store::{Account, ApiKey, FileRecord};

/// The caller of a file route: the account behind the token, the link key, and an
/// app token's claims; or the app's server.
struct Caller {
    account: Option<Account>,
    key: Option<String>,
    app: Option<AppClaims>,
    /// An API key of the `server` scope: the app's backend, the owner of every file here
    /// (so it can delete the versions people name in the app's own files, which no one
    /// signs in to own).
    server: Option<ApiKey>,
}

impl Caller {
    fn access(&self, file: &FileRecord) -> Result<access::Access, Denied> {
        if self.server.is_some() {
            return Ok(access::Access::Owner);
        }
        let account = self.account.as_ref().map(|a| &a.id);
        let grant = self.app.as_ref().and_then(|c| c.level(&file.id));
        access::access(file, account, self.key.as_deref(), grant)
    }
}

async fn file_caller(state: &AppState, req: &Request<Incoming>) -> Result<Caller, ApiError> {
    let token = bearer_token(req);
    if token.as_deref().is_some_and(|t| t.starts_with(KEY_PREFIX)) {
        // Within the key's rate, and its scope, or refused here.
        let server = api_key(state, req, "server").await?;
        return Ok(Caller {
            account: None,
            key: None,
            app: None,
            server: Some(server),
        });
    }
    let (account, app) = match token.as_deref() {
        Some(t) if is_app_token(t) => {
            let claims = app_claims(state, t).await?;
            (Some(app_account(&claims)), Some(claims))
        }
        t => (caller(state, t).await?, None),
    };
    let key = req
        .headers()
        .get("x-atrium-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned);
    Ok(Caller {
        account,
        key,
        app,
        server: None,
    })
}

fn denied(d: Denied) -> ApiError {
    match d {
        Denied::Unauthorized => ApiError::unauthorized(),
        Denied::Forbidden => ApiError::forbidden(),
    }
}

/// The file, if the caller may see it: owner, or a key the link allows.
pub(super) async fn readable(
    state: &AppState,
    req: &Request<Incoming>,
    id: &FileId,
) -> Result<(FileRecord, bool), ApiError> {
    let who = file_caller(state, req).await?;
    let file = state.store.file(id).await?;
    let granted = who.access(&file).map_err(denied)?;
    access::role(&file, granted).map_err(denied)?;
    served_here(state, id).await?;
    let owner = granted == access::Access::Owner;
    Ok((file, owner))
}

/// What a caller may do with a file's history.
pub(super) struct Granted {
    pub(super) file: FileRecord,
    pub(super) role: access::Role,
    pub(super) owner: bool,
    /// Whose allowances their namings and restores spend.
    pub(super) party: Party,
    /// Who they are, by name: an account's name, an app token's name, or "Guest".
    pub(super) name: String,
    /// Who asks, when signed in: their account (an app token's person by the account it
    /// stands for), whatever key they came with.
    pub(super) caller: Option<AccountId>,
}

/// The file and the caller's role in it (owner, or a key the link allows), where it is served.
pub(super) async fn granted(
    state: &AppState,
    req: &Request<Incoming>,
    id: &FileId,
) -> Result<Granted, ApiError> {
    let who = file_caller(state, req).await?;
    let file = state.store.file(id).await?;
    let granted = who.access(&file).map_err(denied)?;
    let (role, _) = access::role(&file, granted).map_err(denied)?;
    served_here(state, id).await?;
    // An app token's person goes by the name its token gives, else by its `sub`.
    let app_name = who
        .app
        .as_ref()
        .map(|c| c.name.clone().unwrap_or_else(|| c.sub.clone()));
    let party = match (granted, &who.app) {
        (access::Access::Owner, _) => Party::Owner,
        (access::Access::Grant { .. }, Some(claims)) => Party::App(claims.sub.clone()),
        _ => Party::Link,
    };
    // The app's server works as the owner, and is paced as the owner is.
    let caller = who
        .account
        .as_ref()
        .map(|a| a.id.clone())
        .or_else(|| who.app.as_ref().map(|c| c.account()))
        .or_else(|| who.server.is_some().then(|| file.owner.clone()));
    let name = match (who.account, who.server) {
        (Some(a), _) => a.name,
        (None, Some(key)) => key.name,
        (None, None) => app_name.unwrap_or_else(|| "Guest".to_owned()),
    };
    Ok(Granted {
        file,
        role,
        owner: granted == access::Access::Owner,
        party,
        name,
        caller,
    })
}

/// File routes run where the file's room is: another node holding the lease
/// means 409 `moved` (with its id). Without a live holder, or with the
/// coordinator unreachable, the request is served here (the store's epoch fence
/// keeps the data safe either way). A room served here answers without asking
/// the coordinator at all: no round trip per request, and no wait on it during
/// a coordinator outage.
pub(in crate::http) async fn served_here(state: &AppState, id: &FileId) -> Result<(), ApiError> {
    if state.rooms.serving(id) {
        return Ok(());
    }
    match state.coordinator.holder(id.as_str()).await {
        Ok(Some(holder)) if holder != state.node => Err(ApiError::moved(&holder)),
        _ => Ok(()),
    }
}

/// The file, if the caller owns it.
pub(super) async fn owned(
    state: &AppState,
    req: &Request<Incoming>,
    id: &FileId,
) -> Result<FileRecord, ApiError> {
    let who = file_caller(state, req).await?;
    let file = state.store.file(id).await?;
    let owns = who.server.is_some() || who.account.as_ref().is_some_and(|a| a.id == file.owner);
    match owns {
        true => {
            served_here(state, id).await?;
            Ok(file)
        }
        false if who.account.is_none() && who.key.is_none() => Err(ApiError::unauthorized()),
        false => Err(ApiError::forbidden()),
    }
}
