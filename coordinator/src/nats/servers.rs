//! The NATS part of the coordinator URL: one server or a cluster's, and how many copies of
//! each bucket the cluster keeps.
//!
//! `nats://a:4222,nats://b:4222,c:4222?replicas=3`: the client connects to any of the servers
//! (and learns the rest of the cluster from them), so a node starts while one of them is down.
//! `replicas` (1 to 5, default 1) is the JetStream replication of the buckets: 3 on a
//! three-server cluster survives the loss of any one server, the leader included. It applies
//! when the buckets are made; an operator changing it later updates them (`nats kv edit`) or
//! uses a new namespace.

use async_nats::ServerAddr;

use crate::CoordinatorError;

/// The NATS servers and the replication of the buckets.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NatsServers {
    pub(super) servers: Vec<ServerAddr>,
    pub(super) replicas: usize,
}

/// The most copies JetStream keeps of a stream.
const MAX_REPLICAS: usize = 5;

/// Parses the URL left once the namespace is taken out of its query.
pub(super) fn parse(url: &str) -> Result<NatsServers, CoordinatorError> {
    let bad = |why: &str| CoordinatorError::Invalid(format!("NATS URL {url:?}: {why}"));
    let (hosts, query) = url.split_once('?').unwrap_or((url, ""));
    let mut replicas = 1;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("replicas", v)) => {
                replicas = v
                    .parse::<usize>()
                    .ok()
                    .filter(|r| (1..=MAX_REPLICAS).contains(r))
                    .ok_or_else(|| bad("`replicas` is a number from 1 to 5"))?;
            }
            _ => {
                return Err(bad(&format!(
                    "unknown setting `{pair}` (known: namespace, replicas)"
                )))
            }
        }
    }
    let servers = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| {
            h.parse::<ServerAddr>()
                .map_err(|e| bad(&format!("server `{h}`: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if servers.is_empty() {
        return Err(bad("no server"));
    }
    Ok(NatsServers { servers, replicas })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_keeps_one_copy() {
        let n = parse("nats://127.0.0.1:4222").unwrap();
        assert_eq!(n.servers.len(), 1);
        assert_eq!(n.replicas, 1);
    }

    #[test]
    fn a_cluster_lists_its_servers_with_or_without_the_scheme() {
        let n =
            parse("nats://a.internal:4222, b.internal:4223,nats://c.internal?replicas=3").unwrap();
        let hosts: Vec<_> = n
            .servers
            .iter()
            .map(|s| (s.host().to_owned(), s.port()))
            .collect();
        assert_eq!(
            hosts,
            [
                ("a.internal".to_owned(), 4222),
                ("b.internal".to_owned(), 4223),
                ("c.internal".to_owned(), 4222)
            ]
        );
        assert_eq!(n.replicas, 3);
    }

    #[test]
    fn bad_urls_are_refused_with_the_reason() {
        for (url, why) in [
            ("nats://a:1?replicas=0", "replicas"),
            ("nats://a:1?replicas=6", "replicas"),
            ("nats://a:1?replicas=x", "replicas"),
            ("nats://a:1?replica=3", "unknown setting"),
            ("nats://a:1,nats://b:notaport", "server"),
            (",", "no server"),
        ] {
            match parse(url) {
                Err(CoordinatorError::Invalid(m)) => assert!(m.contains(why), "{url}: {m}"),
                other => panic!("{url}: {other:?}"),
            }
        }
    }
}
