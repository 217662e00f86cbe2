//! Sign-up, sign-in, sign-out and `me`.

use std::net::IpAddr;

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    bearer_token, client_addr, empty, json_response, rate_limited, read_json, signed_in, ApiError,
    ApiResult, SMALL_BODY,
};
use crate::auth::AuthError;
use crate::ids::{digest, new_secret};
use crate::limits::address_key;
use crate::state::AppState;
use crate::store::{Account, StoreError};

const MIN_PASSWORD_CHARS: usize = 8;
const MAX_PASSWORD_BYTES: usize = 1024;
const MAX_NAME_CHARS: usize = 64;
const MAX_EMAIL_BYTES: usize = 254;

#[derive(Deserialize)]
struct SignUp {
    email: String,
    password: String,
    name: String,
}

#[derive(Deserialize)]
struct SignIn {
    email: String,
    password: String,
}

pub fn account_json(state: &AppState, a: &Account) -> Value {
    json!({
        "id": a.id.as_str(),
        "email": a.email,
        "name": a.name,
        "admin": state.config.is_admin(&a.email),
    })
}

/// The email as typed (trimmed), if it looks like one. The store matches emails
/// without regard to case.
fn normalize_email(email: &str) -> Result<String, ApiError> {
    let email = email.trim().to_owned();
    let valid = email.len() <= MAX_EMAIL_BYTES
        && email.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && !host.is_empty() && !host.contains('@')
        })
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if valid {
        Ok(email)
    } else {
        Err(ApiError::bad_request("a valid email address is required"))
    }
}

fn hashing_error(e: AuthError) -> ApiError {
    match e {
        AuthError::Busy => ApiError::unavailable("too many sign-ins at once; try again shortly"),
        AuthError::Internal(m) => {
            tracing::error!(error = %m, "password hashing failed");
            ApiError::unavailable("sign-in is unavailable; try again")
        }
    }
}

/// A new session for `account`: 201 for a sign-up, 200 for a sign-in.
async fn start_session(state: &AppState, account: &Account, status: StatusCode) -> ApiResult {
    let token = new_secret();
    let ttl = i64::try_from(state.config.session_ttl_ms).unwrap_or(i64::MAX / 2);
    let expires_at = crate::clock::unix_ms().saturating_add(ttl);
    state
        .store
        .create_session(digest(&token), &account.id, expires_at)
        .await?;
    Ok(json_response(
        status,
        &json!({"token": token, "account": account_json(state, account)}),
    ))
}

const TOO_MANY: &str = "too many attempts; wait a minute and try again";

/// Sign-ups are limited per client address (IPv6 by its /64) and per email.
fn check_signup_rate(state: &AppState, addr: IpAddr, email: &str) -> Result<(), ApiError> {
    state
        .auth_by_address
        .check(&address_key(addr))
        .and_then(|()| state.auth_by_email.check(&email.to_lowercase()))
        .map_err(|wait| rate_limited(TOO_MANY, wait))
}

/// Sign-ins are limited per client address and per (address, email), before any
/// hashing. Nothing counted for an email across addresses can refuse a correct
/// password: someone else's failures never lock a person out. Guessing one
/// email's password from many addresses is bounded by the per-address limits and
/// by the node-wide hashing bound.
fn check_signin_rate(state: &AppState, addr: IpAddr, email: &str) -> Result<(), ApiError> {
    let addr = address_key(addr);
    state
        .auth_by_address
        .check(&addr)
        .and_then(|()| {
            state
                .signin_by_address_email
                .check(&(addr, email.to_lowercase()))
        })
        .map_err(|wait| rate_limited(TOO_MANY, wait))
}

pub async fn signup(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let addr = client_addr(&req);
    let body: SignUp = read_json(req, SMALL_BODY).await?;
    let email = normalize_email(&body.email)?;
    check_signup_rate(state, addr, &email)?;
    let name = body.name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(ApiError::bad_request(
            "a name of 1 to 64 plain characters is required",
        ));
    }
    if body.password.chars().count() < MIN_PASSWORD_CHARS
        || body.password.len() > MAX_PASSWORD_BYTES
    {
        return Err(ApiError::bad_request(
            "a password needs at least 8 characters",
        ));
    }
    let taken = || {
        ApiError::new(
            StatusCode::CONFLICT,
            "email-taken",
            "an account with this email exists",
        )
    };
    match state.store.account_by_email(&email).await {
        Ok(_) => return Err(taken()),
        Err(StoreError::NotFound) => {}
        Err(e) => return Err(e.into()),
    }
    let hash = state
        .hasher
        .hash(body.password)
        .await
        .map_err(hashing_error)?;
    let account = match state.store.create_account(&email, name, &hash).await {
        Ok(a) => a,
        Err(StoreError::Conflict) => return Err(taken()),
        Err(e) => return Err(e.into()),
    };
    tracing::info!(account = %account.id, "account created");
    start_session(state, &account, StatusCode::CREATED).await
}

pub async fn signin(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let addr = client_addr(&req);
    let body: SignIn = read_json(req, SMALL_BODY).await?;
    check_signin_rate(state, addr, body.email.trim())?;
    let bad = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "bad-credentials",
            "wrong email or password",
        )
    };
    let Ok(email) = normalize_email(&body.email) else {
        return Err(bad());
    };
    let account = match state.store.account_by_email(&email).await {
        Ok(a) => Some(a),
        Err(StoreError::NotFound) => None,
        Err(e) => return Err(e.into()),
    };
    let ok = state
        .hasher
        .verify(
            body.password,
            account.as_ref().map(|a| a.password_hash.clone()),
        )
        .await
        .map_err(hashing_error)?;
    match account {
        // A correct password signs in, whatever others tried against this email.
        Some(account) if ok => start_session(state, &account, StatusCode::OK).await,
        _ => {
            // Wrong guesses at one email from everywhere are counted: past the
            // limit they are answered 429 (a signal to the guesser and to the
            // operator's metrics), never a correct password.
            match state.signin_failures_by_email.check(&email.to_lowercase()) {
                Ok(()) => Err(bad()),
                Err(wait) => Err(rate_limited(
                    "too many wrong passwords for this email; wait a minute and try again",
                    wait,
                )),
            }
        }
    }
}

pub async fn signout(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let token = bearer_token(&req).ok_or_else(ApiError::unauthorized)?;
    signed_in(state, Some(&token)).await?;
    let d = digest(&token);
    state.store.delete_session(d).await?;
    // Here at once, and on every other node through the coordinator.
    state.sockets.sign_out(d);
    crate::cluster::announce_signout(state, d).await;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Ends every session of the caller's account, here and on every node: their
/// tokens stop working at once and their sockets close with 4001.
pub async fn signout_all(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let account = signed_in(state, bearer_token(&req).as_deref()).await?;
    let digests = state.store.delete_sessions_of(&account.id).await?;
    for d in &digests {
        state.sockets.sign_out(*d);
    }
    crate::cluster::announce_signouts(state, &digests).await;
    tracing::info!(account = %account.id, sessions = digests.len(), "signed out everywhere");
    Ok(empty(StatusCode::NO_CONTENT))
}

pub async fn me(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let account = signed_in(state, bearer_token(&req).as_deref()).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"account": account_json(state, &account)}),
    ))
}
