//! What the node makes of its settings: durations, the trusted proxies, the memory
//! budget, the connection cap, and who is a server admin.

use std::time::Duration;

use super::NodeConfig;

impl NodeConfig {
    pub fn hello_timeout(&self) -> Duration {
        Duration::from_millis(self.hello_timeout_ms)
    }

    pub fn room_idle(&self) -> Duration {
        Duration::from_millis(self.room_idle_ms)
    }

    pub fn snapshot_interval(&self) -> Duration {
        Duration::from_millis(self.snapshot_ms)
    }

    pub fn checkpoint_interval(&self) -> Duration {
        Duration::from_millis(self.checkpoint_ms)
    }

    /// How versions are stored and thinned.
    pub fn history_rules(&self) -> crate::history::HistoryRules {
        let ms = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        crate::history::HistoryRules {
            base_every: self.history_base_every.max(1),
            retention: crate::history::Retention {
                all_ms: ms(self.history_all_ms),
                hourly_ms: ms(self.history_hourly_ms),
                daily_ms: ms(self.history_daily_ms),
            },
            max_doc_bytes: self.max_doc_bytes,
        }
    }

    pub fn coordinator_settings(&self) -> atrium_coordinator::CoordinatorSettings {
        atrium_coordinator::CoordinatorSettings::from_lease(Duration::from_millis(self.lease_ms))
    }

    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_ms)
    }

    /// The app-token verifier's keys and checks, reading the PEM files named.
    pub fn app_token_keys(&self) -> Result<crate::apptoken::KeySource, String> {
        let mut pem_keys = Vec::new();
        for path in &self.app_token_public_keys {
            let origin = path.display().to_string();
            let pem = std::fs::read(path)
                .map_err(|e| format!("ATRIUM_APP_TOKEN_PUBLIC_KEYS: {origin}: {e}"))?;
            pem_keys.push(crate::apptoken::KeySource::read_pem(&origin, &pem)?);
        }
        Ok(crate::apptoken::KeySource {
            hs256_secret: self
                .app_token_hs256_secret
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|s| s.as_bytes().to_vec()),
            pem_keys,
            jwks_url: self.app_token_jwks_url.clone().filter(|u| !u.is_empty()),
            issuer: self.app_token_issuer.clone(),
            audience: self.app_token_audience.clone(),
            skew_s: self.app_token_skew_s,
            jwks_refresh: Duration::from_millis(self.app_token_jwks_refresh_ms),
            jwks_min_refetch: Duration::from_millis(self.app_token_jwks_min_refetch_ms),
            jwks_keep: Duration::from_millis(self.app_token_jwks_keep_ms),
        })
    }

    /// The trusted proxies: addresses or ranges (`10.244.0.0/16`).
    pub fn trusted_proxies(&self) -> Result<Vec<crate::limits::Network>, String> {
        self.trust_proxy
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                crate::limits::Network::parse(s).ok_or_else(|| {
                    format!("ATRIUM_TRUST_PROXY: {s:?} is not an address or a range")
                })
            })
            .collect()
    }

    /// The memory budget in bytes, the machine's default when not set.
    pub fn memory_budget(&self) -> u64 {
        match self.memory_budget {
            0 => crate::memory::default_budget(),
            set => set,
        }
    }

    /// Each account's and address's share of the memory open rooms take.
    pub fn room_memory_share(&self) -> u64 {
        match self.room_memory_share {
            0 => self.memory_budget() / 8,
            set => set,
        }
    }

    /// The node-wide allowance for large messages held until written: the setting, but at
    /// most a quarter of the memory budget, so that sockets which never read cannot hold
    /// the whole budget in messages the node has promised them; never less than the
    /// largest document's welcome, or such a file could never be opened.
    pub fn welcome_budget(&self) -> usize {
        let quarter = usize::try_from(self.memory_budget() / 4).unwrap_or(usize::MAX);
        let largest_welcome = self.max_doc_bytes.saturating_add(1 << 20);
        self.welcome_budget_bytes.min(quarter.max(largest_welcome))
    }

    /// Whether a page of `origin` may open a socket.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let allowed: Vec<&str> = self
            .allowed_origins
            .iter()
            .map(|o| o.trim().trim_end_matches('/'))
            .filter(|o| !o.is_empty())
            .collect();
        allowed.is_empty()
            || allowed
                .iter()
                .any(|o| *o == "*" || o.eq_ignore_ascii_case(origin.trim_end_matches('/')))
    }

    pub fn body_timeout(&self) -> Duration {
        Duration::from_millis(self.body_timeout_ms)
    }

    /// `ATRIUM_MAX_CONNECTIONS`, or the open-file limit less a reserve of 256
    /// descriptors (at least 64).
    pub fn max_connections(&self) -> usize {
        self.max_connections.unwrap_or_else(|| {
            let files = std::fs::read_to_string("/proc/self/limits")
                .ok()
                .as_deref()
                .and_then(open_file_limit)
                .unwrap_or(1024);
            files.saturating_sub(256).max(64)
        })
    }

    /// `ATRIUM_HASH_CONCURRENCY`, or half the cores (at least one): each hash is
    /// about 12 ms of one core, and a flood of them from many addresses must leave
    /// the rest of the machine to relaying.
    pub fn hash_concurrency(&self) -> usize {
        self.hash_concurrency
            .unwrap_or_else(crate::lane::width)
            .max(1)
    }

    /// `ATRIUM_CONNECTIONS_PER_IP`, or `ATRIUM_WS_PER_IP` plus 64 for HTTP;
    /// `None` when it is 0 (no cap).
    pub fn connections_per_ip(&self) -> Option<usize> {
        match self.connections_per_ip {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(self.ws_per_ip.saturating_add(64)),
        }
    }

    pub fn write_timeout(&self) -> Duration {
        Duration::from_millis(self.write_timeout_ms)
    }

    pub fn ping_interval(&self) -> Duration {
        Duration::from_millis(self.ping_ms)
    }

    pub fn ping_timeout(&self) -> Duration {
        Duration::from_millis(self.ping_timeout_ms)
    }

    /// Whether `email` takes the store's key (its Unicode lowercase) of an email
    /// `ATRIUM_ADMINS` lists: such a sign-up is gated, though only the listed spelling (up
    /// to ASCII case) is an admin ([`Self::is_admin`]): `\u{212A}ate@x` lowercases to the
    /// key of `kate@x`, and would take it from the admin's sign-up.
    pub fn claims_admin_email(&self, email: &str) -> bool {
        let key = email.to_lowercase();
        self.admins
            .iter()
            .any(|a| !a.trim().is_empty() && a.trim().to_lowercase() == key)
    }

    pub fn is_admin(&self, email: &str) -> bool {
        self.admins
            .iter()
            .any(|a| !a.trim().is_empty() && a.trim().eq_ignore_ascii_case(email))
    }

    pub fn doc_limits(&self) -> crate::doc::DocLimits {
        crate::doc::DocLimits {
            max_ops: self.max_patch_ops,
            max_doc_bytes: self.max_doc_bytes,
            max_node_bytes: self.max_message_bytes,
            ..Default::default()
        }
    }
}

/// The soft open-file limit from `/proc/self/limits` ("Max open files  1024  524288
/// files"); `unlimited` counts as 2^20.
pub(super) fn open_file_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    match line["Max open files".len()..].split_whitespace().next()? {
        "unlimited" => Some(1 << 20),
        n => n.parse().ok(),
    }
}
