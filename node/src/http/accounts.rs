//! Sign-up, sign-in, sign-out and `me`.

mod checks;
mod signout;

pub use signout::{me, signout, signout_all};

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use self::checks::{
    account_name, admin_signup_is_local, check_password, check_signin_rate,
    check_signup_email_rate, check_signup_rate, hashing_error, normalize_email,
};
use super::{
    client_addr, json_response, on_this_machine, rate_limited, read_json, ApiError, ApiResult,
    SMALL_BODY,
};
use crate::ids::{digest, new_secret};
use crate::state::AppState;
use crate::store::{Account, StoreError};

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

/// A new session for `account`: 201 for a sign-up, 200 for a sign-in.
async fn start_session(state: &AppState, account: &Account, status: StatusCode) -> ApiResult {
    let token = new_secret();
    let ttl = i64::try_from(state.config.session_ttl_ms).unwrap_or(i64::MAX / 2);
    let expires_at = crate::clock::unix_ms().saturating_add(ttl);
    let made = digest(&token);
    state
        .store
        .create_session(made, &account.id, expires_at)
        .await?;
    // Past the account's sessions, its oldest end as a sign-out ends them (never the one
    // just made, whatever the clocks of the nodes that made the others).
    let keep = state.config.sessions_per_account;
    if keep > 0 {
        let ended = state.store.trim_sessions(&account.id, made, keep).await?;
        signout::signed_out(state, &ended).await;
    }
    Ok(json_response(
        status,
        &json!({"token": token, "account": account_json(state, account)}),
    ))
}

/// On a node whose people come with app tokens (`ATRIUM_PASSWORD_ACCOUNTS` off), only the
/// server's admins (`ATRIUM_ADMINS`) sign up and sign in with a password, so they can make
/// API keys; anyone else is refused before any rate is spent or any hash computed.
fn passwords_taken(state: &AppState, email: &str) -> Result<(), ApiError> {
    match state.config.password_accounts || state.config.is_admin(email) {
        true => Ok(()),
        false => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this server has no password accounts: sign in through the app",
        )),
    }
}

pub async fn signup(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let addr = client_addr(&req);
    let local = on_this_machine(state, &req);
    let body: SignUp = read_json(req, SMALL_BODY).await?;
    let email = normalize_email(&body.email)?;
    passwords_taken(state, &email)?;
    // After the address's rate (a 403 says which emails are admins', so asking costs a
    // sign-up), before the email's (or refused tries would spend the operator's).
    check_signup_rate(state, addr)?;
    admin_signup_is_local(state, local, &email)?;
    check_signup_email_rate(state, &email)?;
    let name = account_name(&body.name)?;
    check_password(&body.password)?;
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
    passwords_taken(state, body.email.trim())?;
    // Only an email that could be one is kept in the limiter's table (at most 254 bytes): a
    // key as long as the body (64 KiB, kept twice) made one request from each of many
    // addresses hold gigabytes (the twelfth review). Anything else counts for the address.
    let email = normalize_email(&body.email).ok();
    check_signin_rate(state, addr, email.as_deref())?;
    let bad = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "bad-credentials",
            "wrong email or password",
        )
    };
    let Some(email) = email else {
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
