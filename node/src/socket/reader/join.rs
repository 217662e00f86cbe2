//! The join: signing the socket in, checking its access, taking its account's
//! slot and a turn, then entering the file's room.

use atrium_protocol::CloseCode;

use super::Session;
use crate::apptoken::Level;
use crate::ids::{digest, AccountId, ClientKey, FileId};
use crate::protocol;
use crate::room::access;
use crate::room::{JoinError, JoinRequest, Profile};
use crate::socket::account_slots;
use crate::state::AppState;
use crate::store::StoreError;

/// The claims of the hello's app token. The socket is followed for its expiry and
/// revocations before the revocations are checked again: a revocation at any moment
/// after the verification either fails that check or closes this socket.
async fn app_claims(
    session: &mut Session,
    token: &str,
) -> Result<crate::apptoken::AppClaims, (CloseCode, &'static str)> {
    let state = session.state.clone();
    let claims = match state.app_tokens.verify(token).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(error = %e, "app token refused at hello");
            return Err((CloseCode::Unauthorized, "bad or expired app token"));
        }
    };
    state.app_sockets.track(&session.outbox, &claims);
    session.app_sub = Some(claims.sub.clone());
    if state.app_tokens.revocations().revoked(&claims) {
        return Err((CloseCode::Unauthorized, "bad or expired app token"));
    }
    Ok(claims)
}

/// Signs the socket in and joins it to the file's room. The error is a close.
pub(super) async fn join(
    session: &mut Session,
    hello: protocol::Hello,
) -> Result<(), (CloseCode, &'static str)> {
    let state = session.state.clone();
    let mut grant = None;
    let mut profile = None;
    let account = match &hello.token {
        Some(token) if crate::apptoken::is_app_token(token) => {
            let claims = app_claims(session, token).await?;
            grant = claims.level(&session.file);
            profile = Some(std::sync::Arc::new(Profile {
                sub: claims.sub.clone(),
                color: claims.color.clone(),
                avatar: claims.avatar.clone(),
            }));
            Some(crate::store::Account {
                id: claims.account(),
                email: String::new(),
                name: claims.display_name(),
                password_hash: String::new(),
            })
        }
        Some(token) => {
            let d = digest(token);
            // Registered for sign-out before the token is checked: a sign-out at any
            // moment after this either fails the check or closes this socket.
            state.sockets.add(d, session.outbox.clone());
            session.token = Some(d);
            match state.store.session_account(d).await {
                Ok(a) => Some(a),
                Err(StoreError::NotFound) => {
                    return Err((CloseCode::Unauthorized, "bad or signed-out token"))
                }
                Err(_) => return Err((CloseCode::TryAgainLater, "the store is unavailable")),
            }
        }
        None => None,
    };
    // A refused joiner costs a lookup, never a room: the file and the access it
    // gives are checked before a room is opened, a lease taken or a document read. A
    // room already open checks its joiners itself; if it closes while this hello waits
    // below, the join comes back here to be checked before it may open one.
    let account_id = account.as_ref().map(|a| a.id.clone());
    let mut may_edit = match state.rooms.live(&session.file) {
        Some(_) => None,
        None => {
            Some(check_access(session, account_id.as_ref(), hello.key.as_deref(), grant).await?)
        }
    };
    if let Some(a) = &account {
        let counter = account_slots::counter(&a.id);
        match account_slots::take(&state, &counter).await {
            Ok(true) => session.account_slot = Some(counter),
            Ok(false) => {
                return Err((
                    CloseCode::TooManySockets,
                    "too many sockets for this account",
                ))
            }
            // A coordinator outage must not lock everyone out: fail open, loudly.
            Err(e) => tracing::warn!(error = %e, "socket count unavailable; not enforced"),
        }
    }
    // A turn bounds the work of joining (the client's op id, the room's load), so a
    // storm is taken at the pace the node carries; it is taken only now, so a hello
    // waiting for its account's slot above never holds one. The next waiting join goes
    // once this one is in its room.
    let _turn = state.admission.admit().await.ok_or((
        CloseCode::TryAgainLater,
        "the node is busy with other joins",
    ))?;
    let client = ClientKey::of(&hello.client);
    let stored_op_read_at = std::time::Instant::now();
    let stored_op = read_stored_op(&state, &session.file, client).await?;
    let mut req = JoinRequest {
        outbox: session.outbox.clone(),
        client,
        account: account.map(|a| (a.id, a.name)),
        key: hello.key,
        name: hello.name,
        since: hello.since,
        stored_op,
        stored_op_read_at,
        seat: session.seat.clone(),
        grant,
        profile,
        may_edit,
    };
    if session.outbox.is_closing() {
        // Signed out (or replaced) while waiting for a slot: never welcomed.
        return Err((CloseCode::Unauthorized, "signed out"));
    }
    let mut rereads = 0;
    loop {
        match state.rooms.join(&session.file, &req).await {
            Ok((room, _joined)) => {
                session.room = Some(room);
                return Ok(());
            }
            Err(JoinError::Unchecked) if may_edit.is_none() => {
                let key = req.key.as_deref();
                may_edit = Some(check_access(session, account_id.as_ref(), key, grant).await?);
                req.may_edit = may_edit;
                if session.outbox.is_closing() {
                    return Err((CloseCode::Unauthorized, "signed out"));
                }
            }
            // Rare (a forgetting within the read's moment), so a few tries are plenty.
            Err(JoinError::Reread) if rereads < 3 => {
                rereads += 1;
                req.stored_op_read_at = std::time::Instant::now();
                req.stored_op = read_stored_op(&state, &session.file, client).await?;
            }
            Err(e) => {
                if let JoinError::Paced(wait) = e {
                    session.retry_after = Some(wait);
                }
                return Err((e.close_code(), e.reason()));
            }
        }
    }
}

/// The client's highest op id in the file, as the store has it (0: none).
async fn read_stored_op(
    state: &AppState,
    file: &FileId,
    client: ClientKey,
) -> Result<u64, (CloseCode, &'static str)> {
    match state.store.client_op(file, client).await {
        Ok(op) => Ok(op.map_or(0, |(id, _)| id)),
        Err(StoreError::NotFound) => Ok(0),
        Err(_) => Err((CloseCode::TryAgainLater, "the store is unavailable")),
    }
}

/// Checks the file and the access the hello's credentials give before a room may be
/// opened for it, and whether the node has memory for another room; whether the
/// joiner may edit.
async fn check_access(
    session: &Session,
    account: Option<&AccountId>,
    key: Option<&str>,
    grant: Option<Level>,
) -> Result<bool, (CloseCode, &'static str)> {
    let state = &session.state;
    if !state.memory.admits() {
        state.metrics.memory_refusals.inc();
        return Err((
            CloseCode::TryAgainLater,
            "the node is at its memory budget; try again later",
        ));
    }
    let record = match state.store.file(&session.file).await {
        Ok(record) => record,
        Err(StoreError::NotFound) => return Err((CloseCode::NotFound, "file not found")),
        Err(_) => return Err((CloseCode::TryAgainLater, "the store is unavailable")),
    };
    let (role, _) = access::access(&record, account, key, grant)
        .and_then(|a| access::role(&record, a))
        .map_err(|d| {
            let e = JoinError::Denied(d);
            (e.close_code(), e.reason())
        })?;
    let may_edit = role == access::Role::Editor;
    let opener = crate::room::shares::Opener {
        address: session.outbox.address(),
        account: account.cloned(),
        editor: may_edit,
    };
    state.rooms.may_open(&record, &opener).map_err(|e| {
        state.metrics.memory_refusals.inc();
        (e.close_code(), e.reason())
    })?;
    Ok(may_edit)
}
