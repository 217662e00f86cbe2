//! The static endpoint of settings (`ATRIUM_WEBHOOK_URL`), stored as the endpoint
//! `static` when the node starts, so every node of a fleet with the same settings agrees
//! on it and its messages share the outbox with the others.

use super::{sign, target};
use crate::config::NodeConfig;
use crate::store::{WebhookEndpoint, EVENT_TYPES};

/// The id of the endpoint made from settings.
pub const STATIC_ID: &str = "static";

/// The endpoint the settings describe, if any, or what is wrong with them.
pub fn static_endpoint(config: &NodeConfig) -> Result<Option<WebhookEndpoint>, String> {
    let Some(url) = &config.webhook_url else {
        return Ok(None);
    };
    target::parse(url).map_err(|e| format!("ATRIUM_WEBHOOK_URL: {e}"))?;
    let secret = config
        .webhook_secret
        .clone()
        .ok_or("ATRIUM_WEBHOOK_URL needs ATRIUM_WEBHOOK_SECRET (`whsec_<base64>`)")?;
    sign::secret_key(&secret).map_err(|e| format!("ATRIUM_WEBHOOK_SECRET: {e}"))?;
    let mut events: Vec<String> = config
        .webhook_events
        .iter()
        .map(|e| e.trim().to_owned())
        .filter(|e| !e.is_empty())
        .collect();
    if let Some(bad) = events.iter().find(|e| !EVENT_TYPES.contains(&e.as_str())) {
        return Err(format!("ATRIUM_WEBHOOK_EVENTS: unknown event `{bad}`"));
    }
    if events.is_empty() {
        events = EVENT_TYPES.iter().map(|e| (*e).to_owned()).collect();
    }
    Ok(Some(WebhookEndpoint {
        id: STATIC_ID.to_owned(),
        url: url.clone(),
        secret,
        events,
        enabled: true,
        description: "from ATRIUM_WEBHOOK_URL".to_owned(),
        created_at: 0,
    }))
}
