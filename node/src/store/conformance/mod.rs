//! The [`Store`] contract as executable checks, for every store.
//!
//! Each check is an async function over `&dyn Store` that makes its own accounts
//! and files (random ids and emails), so checks never depend on one another.
//! [`conformance_suite!`] turns them into one `#[tokio::test]` per check for a
//! store; the embedded store runs them below, the Postgres store in
//! `postgres/tests`.

mod accounts;
mod app_keys;
mod appends;
mod client_ops;
mod files;
mod history;
mod logs;
mod round_trip;
mod server;
mod snapshots;
mod support;
mod takes;
mod webhooks;

pub use accounts::{
    accounts_and_email_case, sessions, sessions_expire_and_end_by_account,
    sessions_trimmed_to_the_newest,
};
pub use app_keys::{api_keys_by_digest, revocations_last_until_they_end};
pub use appends::{
    empty_appends, gapless_appends, one_fenced_file_does_not_fail_the_batch,
    one_file_twice_in_a_batch,
};
pub use client_ops::client_op_keeps_the_highest;
pub use files::{file_cap_per_owner, files_crud, stored_bytes_per_owner};
pub use history::{
    deleted_file_history_is_gone, retention_thins_with_age,
    versions_after_a_row_without_its_size_start_a_base, versions_are_fenced,
    versions_named_and_dropped, versions_plan_for_their_chain, versions_save_read_and_page,
};
pub(crate) use logs::patch;
pub use round_trip::patches_round_trip;
pub use server::{files_by_prefix, server_ops_expire};
pub use snapshots::{
    deleted_file_is_gone_everywhere, large_documents_round_trip, ping_answers,
    snapshots_never_go_back_and_trim_the_log,
};
pub(crate) use support::{new_file, record};
pub use takes::{
    fencing_after_a_second_take, take_file_keeps_behind, take_file_keeps_behind_within_bytes,
    take_file_reads_snapshot_and_log,
};
pub use webhooks::{
    file_updated_rides_on_the_append, version_created_rides_on_the_version, webhook_endpoints_crud,
    webhook_outbox_in_order, webhook_retries_failures_and_bounds, webhook_trim_drops_people_first,
};

/// One `#[tokio::test]` per check, each on a store from `$open` (an async
/// expression giving `(Arc<dyn Store>, guard)`; the guard lives until the end of
/// the test, e.g. a temporary folder or database).
macro_rules! conformance_suite {
    ($open:expr) => {
        $crate::store::conformance::conformance_suite!(@each $open;
            accounts_and_email_case,
            sessions,
            sessions_expire_and_end_by_account,
            sessions_trimmed_to_the_newest,
            files_crud,
            file_cap_per_owner,
            stored_bytes_per_owner,
            take_file_reads_snapshot_and_log,
            take_file_keeps_behind,
            take_file_keeps_behind_within_bytes,
            fencing_after_a_second_take,
            gapless_appends,
            one_fenced_file_does_not_fail_the_batch,
            one_file_twice_in_a_batch,
            empty_appends,
            client_op_keeps_the_highest,
            snapshots_never_go_back_and_trim_the_log,
            deleted_file_is_gone_everywhere,
            large_documents_round_trip,
            patches_round_trip,
            ping_answers,
            versions_save_read_and_page,
            versions_plan_for_their_chain,
            versions_after_a_row_without_its_size_start_a_base,
            versions_named_and_dropped,
            retention_thins_with_age,
            versions_are_fenced,
            deleted_file_history_is_gone,
            api_keys_by_digest,
            revocations_last_until_they_end,
            files_by_prefix,
            server_ops_expire,
            webhook_endpoints_crud,
            webhook_outbox_in_order,
            file_updated_rides_on_the_append,
            webhook_retries_failures_and_bounds,
            webhook_trim_drops_people_first,
            version_created_rides_on_the_version,
        );
    };
    (@each $open:expr; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (store, guard) = $open.await;
                $crate::store::conformance::$check(&*store).await;
                drop(store);
                drop(guard);
            }
        )*
    };
}
pub(crate) use conformance_suite;

// ---------------------------------------------------------------- the embedded store

mod sqlite {
    use std::sync::Arc;

    use crate::store::sqlite::SqliteStore;
    use crate::store::Store;

    async fn open() -> (Arc<dyn Store>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("temporary folder");
        let store = SqliteStore::open(dir.path()).expect("open the embedded store");
        (Arc::new(store), dir)
    }

    crate::store::conformance::conformance_suite!(open());
}
