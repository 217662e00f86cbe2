//! What a sign-up or sign-in is checked against before any hashing: the name,
//! password and email's form, and the rates per address and per email.

use std::net::IpAddr;

use crate::auth::AuthError;
use crate::http::{busy, plain_name, rate_limited, ApiError};
use crate::limits::address_key;
use crate::state::AppState;

const MIN_PASSWORD_CHARS: usize = 8;
const MAX_PASSWORD_BYTES: usize = 1024;
const MAX_NAME_CHARS: usize = 64;
const MAX_EMAIL_BYTES: usize = 254;

/// The email as typed (trimmed), if it looks like one. The store matches emails
/// without regard to case.
pub(super) fn normalize_email(email: &str) -> Result<String, ApiError> {
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

/// An email `ATRIUM_ADMINS` lists (or one the store would take for it) is signed up only by
/// a caller on the node's own machine (`local`: see [`crate::http::caller::OnThisMachine`]).
/// An email is not proven, so without this whoever reached a new node first with an admin's
/// email would be its server admin; the operator signs the admins up from the node's host
/// or pod (`kubectl port-forward`), which no one elsewhere can.
pub(super) fn admin_signup_is_local(
    state: &AppState,
    local: bool,
    email: &str,
) -> Result<(), ApiError> {
    match local || !state.config.claims_admin_email(email) {
        true => Ok(()),
        false => Err(ApiError::new(
            hyper::StatusCode::FORBIDDEN,
            "forbidden",
            "a server admin's email is signed up only from the node's own machine",
        )),
    }
}

pub(super) fn hashing_error(e: AuthError) -> ApiError {
    match e {
        AuthError::Busy => busy("too many sign-ins at once; try again shortly"),
        AuthError::Internal(m) => {
            tracing::error!(error = %m, "password hashing failed");
            ApiError::unavailable("sign-in is unavailable; try again")
        }
    }
}

const TOO_MANY: &str = "too many attempts; wait a minute and try again";

/// A sign-up's rate from its client address (IPv6 by its /64): spent before anything
/// about the email is answered.
pub(super) fn check_signup_rate(state: &AppState, addr: IpAddr) -> Result<(), ApiError> {
    state
        .auth_by_address
        .check(&address_key(addr))
        .map_err(|wait| rate_limited(TOO_MANY, wait))
}

/// A sign-up's rate for its email: spent only by sign-ups the email may have, so refused
/// tries at an admin's email from elsewhere do not keep the operator's own at 429.
pub(super) fn check_signup_email_rate(state: &AppState, email: &str) -> Result<(), ApiError> {
    state
        .auth_by_email
        .check(&email.to_lowercase())
        .map_err(|wait| rate_limited(TOO_MANY, wait))
}

/// Sign-ins are limited per client address and per (address, email), before any
/// hashing. Nothing counted for an email across addresses can refuse a correct
/// password: someone else's failures never lock a person out. Guessing one
/// email's password from many addresses is bounded by the per-address limits and
/// by the node-wide hashing bound.
pub(super) fn check_signin_rate(
    state: &AppState,
    addr: IpAddr,
    email: Option<&str>,
) -> Result<(), ApiError> {
    let addr = address_key(addr);
    state
        .auth_by_address
        .check(&addr)
        .and_then(|()| match email {
            Some(email) => state
                .signin_by_address_email
                .check(&(addr, email.to_lowercase())),
            None => Ok(()),
        })
        .map_err(|wait| rate_limited(TOO_MANY, wait))
}

/// A person's name (trimmed): 1 to 64 plain characters.
pub(super) fn account_name(name: &str) -> Result<&str, ApiError> {
    plain_name(
        name,
        MAX_NAME_CHARS,
        "a name of 1 to 64 plain characters is required",
    )
}

/// A new password: at least 8 characters, at most 1 KiB.
pub(super) fn check_password(password: &str) -> Result<(), ApiError> {
    if password.chars().count() < MIN_PASSWORD_CHARS || password.len() > MAX_PASSWORD_BYTES {
        return Err(ApiError::bad_request(
            "a password needs at least 8 characters",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_in_refused_for_busy_hashing_says_when_to_come_back() {
        let e = hashing_error(AuthError::Busy);
        assert_eq!(e.status, hyper::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.code, "unavailable");
        assert_eq!(e.retry_after, Some(2));
    }
}
