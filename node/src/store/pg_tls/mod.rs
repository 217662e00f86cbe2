//! TLS to Postgres, as libpq's `sslmode` and `sslrootcert` in `ATRIUM_DATABASE_URL` ask.
//!
//! tokio-postgres reads `sslmode=disable|prefer|require` itself and knows nothing of the
//! certificate checks; this module takes both settings out of the URL, hands tokio-postgres
//! the mode it understands, and builds the rustls configuration that does the checking:
//!
//! | `sslmode` | TLS | server certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | when the server offers it, else plain | not checked |
//! | `require` | always | not checked; checked as `verify-ca` when `sslrootcert` is given (as libpq) |
//! | `verify-ca` | always | chain to `sslrootcert` (or the system's roots) |
//! | `verify-full` | always | chain as `verify-ca`, and the host name (or IP) in the URL |
//!
//! `sslrootcert` is a PEM file of one or more certificates, or `system` for the system's
//! roots; without it the system's roots are used.

mod url;
mod verify;

#[cfg(test)]
mod tests;

use tokio_postgres_rustls::MakeRustlsConnect;

use url::{is_url, take_ssl_params};
use verify::client_config;

/// What `sslmode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other:?} is not supported: use disable, prefer, require, \
                     verify-ca or verify-full"
                ))
            }
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// A connection setting ready for tokio-postgres (or deadpool): the parsed URL with the mode
/// tokio-postgres understands, the TLS connector, and the mode as asked.
pub struct PgConnect {
    pub config: tokio_postgres::Config,
    pub tls: MakeRustlsConnect,
    pub mode: SslMode,
}

/// Reads a Postgres URL (`postgres://...` or `postgresql://...`), `sslmode` and
/// `sslrootcert` included. Errors name what is wrong, never the password.
pub fn parse(url: &str) -> Result<PgConnect, String> {
    let (rest, mode, root) = take_ssl_params(url)?;
    let mut config: tokio_postgres::Config = rest.parse().map_err(|e| {
        if is_url(url) {
            format!("bad Postgres URL: {e}")
        } else {
            format!(
                "bad Postgres URL: {e} (sslmode verify-ca and verify-full and sslrootcert \
                 need the URL form, postgres://...)"
            )
        }
    })?;
    let mut mode = match mode {
        Some(m) => SslMode::parse(&m)?,
        // Without one in the URL, what tokio-postgres read (a key=value string's own
        // sslmode, or its default, prefer).
        None => match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Disable => SslMode::Disable,
            tokio_postgres::config::SslMode::Require => SslMode::Require,
            _ => SslMode::Prefer,
        },
    };
    if mode == SslMode::Require && root.is_some() {
        // libpq: with a root certificate, `require` checks the chain as `verify-ca` does.
        mode = SslMode::VerifyCa;
    }
    config.ssl_mode(match mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    let tls = MakeRustlsConnect::new(client_config(mode, root.as_deref())?);
    Ok(PgConnect { config, tls, mode })
}
