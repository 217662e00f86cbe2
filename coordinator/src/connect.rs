//! Choosing the backend from the coordinator URL (`ATRIUM_COORDINATOR`).

use std::sync::Arc;

use crate::keys::split_namespace;
use crate::{
    Coordinator, CoordinatorError, CoordinatorSettings, MemoryCoordinator, NatsCoordinator,
    RedisCoordinator,
};

/// Connects to the coordinator `url` names:
///
/// - empty or `memory://`: [`MemoryCoordinator`] (a single node);
/// - `nats://host:port[,host:port...][?replicas=N]`: [`NatsCoordinator`] (JetStream must be
///   enabled; a cluster's servers, and how many copies of each bucket it keeps);
/// - `redis://[user:pass@]host:port[/db]`: [`RedisCoordinator`].
///
/// A `?namespace=NAME` query (`[A-Za-z0-9_-]{1,32}`, default `atrium`) keeps fleets that
/// share a server apart: it prefixes the NATS buckets and subjects, or the Redis keys and
/// channels. Every instance of one fleet must use the same namespace and lease time.
pub async fn connect(
    url: &str,
    settings: CoordinatorSettings,
) -> Result<Arc<dyn Coordinator>, CoordinatorError> {
    settings.validate()?;
    let url = url.trim();
    if url.is_empty() || url.starts_with("memory://") {
        return Ok(Arc::new(MemoryCoordinator::new(settings)));
    }
    let (base, ns) = split_namespace(url)?;
    if base.starts_with("nats://") {
        Ok(Arc::new(
            NatsCoordinator::connect(&base, &ns, settings).await?,
        ))
    } else if base.starts_with("redis://") {
        Ok(Arc::new(
            RedisCoordinator::connect(&base, &ns, settings).await?,
        ))
    } else {
        Err(CoordinatorError::Invalid(format!(
            "coordinator URL {url:?}: the scheme must be memory://, nats:// or redis://"
        )))
    }
}
