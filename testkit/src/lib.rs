//! What Atrium's tests share, written once: the test services' environment
//! ([`env`]), a throwaway Postgres database per test ([`postgres`]), a one-shot
//! HTTP client ([`http`]), and spawned binaries whose output is kept and printed
//! when a test fails ([`process`]). Every crate takes it as a dev-dependency;
//! the load tool's cluster harness uses the Postgres part at run time.
//!
//! A test that needs a service fails, naming what is missing, instead of
//! skipping: run `scripts/services.sh start && source .services/env` first.

pub mod env;
pub mod http;
pub mod postgres;
pub mod process;
pub mod ws;
