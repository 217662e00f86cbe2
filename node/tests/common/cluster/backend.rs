//! Which coordinator a cluster runs on, and the macro that runs a cluster test on both.

use super::*;

/// Generates `mod NAME { fn nats(); fn redis() }`, two tests running
/// `NAME(Backend::...)`, so every cluster test runs against both coordinators.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nats() {
                super::$name($crate::common::Backend::Nats).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$name($crate::common::Backend::Redis).await
            }
        }
    )*};
}

/// Which coordinator a cluster uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Nats,
    Redis,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Nats => "nats",
            Backend::Redis => "redis",
        }
    }

    /// The suite's shared server of this kind.
    pub fn shared_url(self) -> String {
        match self {
            Backend::Nats => service_env("ATRIUM_TEST_NATS_URL"),
            Backend::Redis => service_env("ATRIUM_TEST_REDIS_URL"),
        }
    }
}
