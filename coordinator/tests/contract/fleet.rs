//! The backends under test and a fleet's instances of one namespace.

use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{
    Coordinator, CoordinatorSettings, MemoryCoordinator, NatsCoordinator, RedisCoordinator,
};

pub const LEASE: Duration = Duration::from_millis(600);
/// Long enough for any backend to notice a lapse (NATS expires up to ~250 ms late).
pub const LAPSE: Duration = Duration::from_millis(1_500);

#[derive(Clone, Copy)]
pub enum Backend {
    Memory,
    Nats,
    Redis,
}

pub fn settings() -> CoordinatorSettings {
    CoordinatorSettings::from_lease(LEASE)
}

pub fn env_url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is unset: run `scripts/services.sh start && source .services/env` first")
    })
}

/// Instances of one coordinator namespace, as separate processes of a fleet would hold them.
pub struct Fleet {
    backend: Backend,
    ns: String,
    memory: Option<Arc<MemoryCoordinator>>,
    nats: Vec<Arc<NatsCoordinator>>,
    redis: Vec<Arc<RedisCoordinator>>,
}

impl Fleet {
    pub fn new(backend: Backend) -> Self {
        Self {
            backend,
            ns: format!("t{:016x}", rand::random::<u64>()),
            memory: None,
            nats: Vec::new(),
            redis: Vec::new(),
        }
    }

    /// A coordinator instance; for the in-memory backend, the same one every time.
    pub async fn instance(&mut self) -> Arc<dyn Coordinator> {
        match self.backend {
            Backend::Memory => self
                .memory
                .get_or_insert_with(|| Arc::new(MemoryCoordinator::new(settings())))
                .clone(),
            Backend::Nats => {
                let url = env_url("ATRIUM_TEST_NATS_URL");
                let c = NatsCoordinator::connect(&url, &self.ns, settings()).await;
                kept(&mut self.nats, c.expect("connect to NATS"))
            }
            Backend::Redis => {
                let url = env_url("ATRIUM_TEST_REDIS_URL");
                let c = RedisCoordinator::connect(&url, &self.ns, settings()).await;
                kept(&mut self.redis, c.expect("connect to Redis"))
            }
        }
    }

    pub async fn cleanup(self) {
        if let Some(c) = self.nats.first() {
            c.destroy().await.unwrap();
        }
        if let Some(c) = self.redis.first() {
            c.destroy().await.unwrap();
        }
    }
}

/// Keeps a networked instance (to clean up after the test) and hands it out.
fn kept<C: Coordinator>(instances: &mut Vec<Arc<C>>, c: C) -> Arc<dyn Coordinator> {
    let c = Arc::new(c);
    instances.push(c.clone());
    c
}
