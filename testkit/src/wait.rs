//! Waiting, with a deadline, for something a test cannot be told about: every wait fails
//! the test when its time is up instead of hanging it.

use std::future::Future;
use std::time::{Duration, Instant};

/// Asks `check` every `every` until it answers `Ok`. Once `within` has passed, fails the
/// test with `fail` of the last answer (the reason is only written when it is needed).
pub async fn until<T, E, F, Fut>(
    within: Duration,
    every: Duration,
    mut check: F,
    fail: impl FnOnce(E) -> String,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = Instant::now() + within;
    loop {
        let last = match check().await {
            Ok(done) => return done,
            Err(last) => last,
        };
        if Instant::now() >= deadline {
            panic!("{}", fail(last));
        }
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn it_returns_once_the_check_holds() {
        let mut asked = 0;
        let got = until(
            Duration::from_secs(10),
            Duration::from_millis(1),
            || {
                asked += 1;
                let n = asked;
                async move {
                    if n < 3 {
                        Err(n)
                    } else {
                        Ok(n)
                    }
                }
            },
            |n| format!("only {n}"),
        )
        .await;
        assert_eq!(got, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "still 0")]
    async fn it_fails_with_the_last_answer() {
        until(
            Duration::from_millis(30),
            Duration::from_millis(5),
            || async { Err::<(), _>(0) },
            |n| format!("still {n}"),
        )
        .await;
    }
}
