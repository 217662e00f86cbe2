//! One contract, three backends: every test of these modules runs against the in-memory
//! coordinator, a real `nats-server -js` and a real `redis-server`, in real time with 600 ms
//! leases.
//!
//! The networked runs need the servers: `scripts/services.sh start && source .services/env`
//! (it sets ATRIUM_TEST_NATS_URL and ATRIUM_TEST_REDIS_URL). Without them these tests fail,
//! never pass silently. Each test uses its own namespace, so they run in parallel.

mod fleet;
mod leases;
mod many_files;
mod membership;
mod nats_cluster;
mod support;
mod watch;

use fleet::Backend;

/// Runs every contract test against one backend, as `<module>::<test>`.
macro_rules! contract {
    ($backend:ident, $module:ident) => {
        mod $module {
            use super::Backend;

            contract!(@tests $backend:
                leases::leases_hang_on_their_holders_membership,
                leases::a_dead_holders_files_are_all_free_when_it_lapses,
                leases::release_lets_others_in_at_once,
                many_files::files_opening_together_never_contend,
                membership::membership_lapses_and_carries_draining,
                membership::counter_slots_vanish_with_their_node,
                membership::an_evicted_node_frees_its_files_at_once,
                watch::watchers_see_a_lapse_within_the_lease_time,
                watch::watchers_see_leases_and_messages);
        }
    };
    (@tests $backend:ident: $($group:ident::$test:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                crate::$group::$test(Backend::$backend).await
            }
        )+
    };
}

contract!(Memory, memory);
contract!(Nats, nats);
contract!(Redis, redis);
