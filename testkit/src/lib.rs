//! What Atrium's tests share, written once: the test services' environment
//! ([`env`]), a process's CPU time ([`cpu`]), a throwaway Postgres database per test ([`postgres`]), a one-shot
//! HTTP client ([`http`]), raw WebSocket upgrades ([`ws`]), spawned binaries whose
//! output is kept and printed when a test fails ([`process`]), a fleet of nodes and
//! routers ([`fleet`]), raw TCP connections from chosen addresses ([`tcp`]), and deadlines for what a test waits on ([`wait`]). Every crate
//! takes it as a dev-dependency; the load tool uses the Postgres part (for its cluster
//! harness) and the CPU part at run time.
//!
//! A test that needs a service fails, naming what is missing, instead of
//! skipping: run `scripts/services.sh start && source .services/env` first.

pub mod cpu;
pub mod env;
pub mod fleet;
pub mod http;
pub mod jwt;
pub mod postgres;
pub mod process;
pub mod tcp;
pub mod wait;
pub mod ws;
