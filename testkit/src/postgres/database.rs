//! A throwaway database on the suite's server.

use super::{connect, drop_database, with_database};
use crate::env::{secret, service_env};

/// A database of its own on the server `ATRIUM_TEST_DATABASE_URL` names.
pub struct TestDatabase {
    pub name: String,
    /// Its URL, for `ATRIUM_DATABASE_URL` or a direct connection.
    pub url: String,
    admin: String,
}

impl TestDatabase {
    pub async fn create() -> TestDatabase {
        let admin = service_env("ATRIUM_TEST_DATABASE_URL");
        let name = format!("atrium_t_{}", &secret()[..16]);
        connect(&admin)
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        TestDatabase {
            url: with_database(&admin, &name),
            name,
            admin,
        }
    }

    /// Runs SQL on the server's maintenance database (not on this one).
    pub async fn admin(&self, sql: &str) {
        connect(&self.admin)
            .await
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Cuts everyone off this database: no new connections, and the open ones
    /// terminated (a Postgres outage, as far as its clients can tell).
    pub async fn cut_off(&self) {
        let name = &self.name;
        self.admin(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"))
            .await;
        self.admin(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ))
        .await;
    }

    /// Lets clients connect again.
    pub async fn restore(&self) {
        self.admin(&format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS true",
            self.name
        ))
        .await;
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        drop_database(&self.admin, &self.name);
    }
}
