use super::*;
use crate::env::service_env;

#[test]
fn the_database_name_is_replaced_and_the_rest_kept() {
    assert_eq!(
        with_database(
            "postgres://u:p@127.0.0.1:5432/postgres?sslmode=disable",
            "t1"
        ),
        "postgres://u:p@127.0.0.1:5432/t1?sslmode=disable"
    );
    assert_eq!(
        with_database("postgres://127.0.0.1:5432", "t2"),
        "postgres://127.0.0.1:5432/t2"
    );
}

#[tokio::test]
async fn a_test_database_exists_until_dropped() {
    let db = TestDatabase::create().await;
    let name = db.name.clone();
    let client = connect(&db.url).await;
    client
        .batch_execute("CREATE TABLE t (x int)")
        .await
        .unwrap();
    drop(client);
    let admin = service_env("ATRIUM_TEST_DATABASE_URL");
    drop(db);
    let left = connect(&admin)
        .await
        .query("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await
        .unwrap();
    assert!(left.is_empty(), "{name} is still there");
}
