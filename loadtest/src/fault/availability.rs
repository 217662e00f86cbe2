//! The availability probe: every file asked for through the router, and what that saw.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::*;

/// What the availability probe saw.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Availability {
    /// From the fault striking until every file was served again for good: for each file the
    /// first 200, at or after the fault was undone, of the 200s that last until probing ends;
    /// None when some file's last answer failed.
    pub recover_ms: Option<f64>,
    /// The longest time any one file went without a 200, from its first failed answer to its
    /// next good one (or to the end of probing).
    pub longest_outage_ms: f64,
    /// Files that had at least one failed answer.
    pub files_interrupted: u64,
}

/// One probe answer: ms since the fault struck, and whether it was a 200.
pub type Sample = (f64, bool);

/// What one router said of one file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    Served,
    /// An error, a timeout or another status.
    Failed,
    /// The router refused the connection: it is down, and a load balancer's health check
    /// would send nobody there.
    Down,
}

/// Every answer the probe had: by router, by file, in order, with ms since the fault struck.
pub type Probed = Vec<Vec<Vec<(f64, Answer)>>>;

/// How long probing goes on past `stop` while some file's last answer through some router
/// was not a 200: one request timing out in the last round on a loaded machine is a file
/// served late, not a file never served again.
const SETTLE: Duration = Duration::from_secs(5);

/// Asks every file's document through every router every [`PROBE_EVERY`] until `stop`, and
/// then while some file's last answer was not a 200, for at most [`SETTLE`] more.
pub async fn probe(
    routers: Vec<Endpoint>,
    files: Vec<FileKeys>,
    started: Instant,
    stop: Arc<AtomicBool>,
) -> Probed {
    let mut seen: Probed = vec![vec![Vec::new(); files.len()]; routers.len()];
    let asks: Vec<(usize, usize)> = (0..routers.len())
        .flat_map(|r| (0..files.len()).map(move |f| (r, f)))
        .collect();
    // Enough at once that a round over hundreds of files, many of them down (each such
    // request waiting up to its 1 s timeout), still ends within a few seconds; a small run
    // asks everything at once, so one router holding requests does not slow the round.
    let at_once = if asks.len() <= 64 {
        asks.len().max(1)
    } else {
        asks.len().div_ceil(4).clamp(64, 256)
    };
    let mut stopped: Option<Instant> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            let since = *stopped.get_or_insert_with(Instant::now);
            if settled(&seen) || since.elapsed() >= SETTLE {
                break;
            }
        }
        let round = Instant::now();
        let answers: Vec<(f64, Answer)> = futures_util::stream::iter(asks.iter().copied())
            .map(|(r, f)| {
                let (ep, file) = (&routers[r], &files[f]);
                async move {
                    let path = format!("/api/files/{}/doc", file.id);
                    let got =
                        http::get_with_key(ep, &path, &file.view_key, Duration::from_secs(1)).await;
                    let answer = match got {
                        Ok(a) if a.status == 200 => Answer::Served,
                        Err(e) if refused(&e) => Answer::Down,
                        _ => Answer::Failed,
                    };
                    (ms(started.elapsed()), answer)
                }
            })
            .buffered(at_once)
            .collect()
            .await;
        for (&(r, f), answer) in asks.iter().zip(answers) {
            seen[r][f].push(answer);
        }
        tokio::time::sleep(PROBE_EVERY.saturating_sub(round.elapsed())).await;
    }
    seen
}

/// Whether every file's last answer through every router was a 200.
pub fn settled(seen: &Probed) -> bool {
    seen.iter()
        .flatten()
        .all(|answers| answers.last().is_some_and(|a| a.1 == Answer::Served))
}

/// Whether a request failed because its connection was refused.
fn refused(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// Each file's answers as the fleet's: served when every router that is up served it, and
/// at least one was up (with one router, a router down is a file not served).
pub fn through_all(probed: &Probed) -> Vec<Vec<Sample>> {
    let Some(first) = probed.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|f| {
            (0..first[f].len())
                .map(|k| {
                    let round: Vec<(f64, Answer)> = probed
                        .iter()
                        .filter_map(|router| router[f].get(k).copied())
                        .collect();
                    let t = round.iter().map(|a| a.0).fold(0.0, f64::max);
                    let none_failed = round.iter().all(|a| a.1 != Answer::Failed);
                    let one_up = round.iter().any(|a| a.1 == Answer::Served);
                    (t, none_failed && one_up)
                })
                .collect()
        })
        .collect()
}

/// Each file's answers through router `r` alone (down is not served), for files `only` (every
/// file when None).
pub fn through(probed: &Probed, r: usize, only: Option<&[usize]>) -> Vec<Vec<Sample>> {
    let Some(router) = probed.get(r) else {
        return Vec::new();
    };
    router
        .iter()
        .enumerate()
        .filter(|(f, _)| only.is_none_or(|o| o.contains(f)))
        .map(|(_, answers)| {
            answers
                .iter()
                .map(|&(t, a)| (t, a == Answer::Served))
                .collect()
        })
        .collect()
}

/// The figures of what `probe` saw, the fault undone `cleared_ms` after it struck.
pub fn availability(seen: &[Vec<Sample>], cleared_ms: f64) -> Availability {
    let mut a = Availability::default();
    let mut recover = Some(0.0f64);
    for answers in seen {
        let mut down_since: Option<f64> = None;
        let mut interrupted = false;
        for &(t, ok) in answers {
            match (ok, down_since) {
                (false, None) => {
                    down_since = Some(t);
                    interrupted = true;
                }
                (true, Some(since)) => {
                    a.longest_outage_ms = a.longest_outage_ms.max(t - since);
                    down_since = None;
                }
                _ => {}
            }
        }
        if let (Some(since), Some(&(last, _))) = (down_since, answers.last()) {
            a.longest_outage_ms = a.longest_outage_ms.max(last - since);
        }
        a.files_interrupted += u64::from(interrupted);
        // Back: the first good answer, at or after the fault was undone, of the good answers
        // that last to the end (a file failing again later is not back yet).
        let last_failure = answers.iter().rposition(|&(_, ok)| !ok);
        let back = answers[last_failure.map_or(0, |i| i + 1)..]
            .iter()
            .find(|&&(t, _)| t >= cleared_ms)
            .map(|&(t, _)| t);
        recover = match (recover, back) {
            (Some(r), Some(b)) => Some(r.max(b)),
            _ => None,
        };
    }
    a.recover_ms = recover.map(round3);
    a.longest_outage_ms = round3(a.longest_outage_ms);
    a
}
