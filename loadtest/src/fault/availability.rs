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
type Sample = (f64, bool);

/// Asks every file's document through the router every [`PROBE_EVERY`] until `stop`, and
/// returns each file's answers in order.
pub async fn probe(
    endpoint: Endpoint,
    files: Vec<FileKeys>,
    started: Instant,
    stop: Arc<AtomicBool>,
) -> Vec<Vec<Sample>> {
    let mut seen: Vec<Vec<Sample>> = vec![Vec::new(); files.len()];
    // Enough at once that a round over hundreds of files, many of them down (each such
    // request waiting up to its 1 s timeout), still ends within a few seconds.
    let at_once = files.len().div_ceil(4).clamp(16, 256);
    while !stop.load(Ordering::Relaxed) {
        let round = Instant::now();
        let answers: Vec<Sample> = futures_util::stream::iter(files.iter().cloned())
            .map(|f: FileKeys| {
                let ep = endpoint.clone();
                async move {
                    let path = format!("/api/files/{}/doc", f.id);
                    let ok = matches!(
                        http::get_with_key(&ep, &path, &f.view_key, Duration::from_secs(1)).await,
                        Ok(a) if a.status == 200
                    );
                    (ms(started.elapsed()), ok)
                }
            })
            .buffered(at_once)
            .collect()
            .await;
        for (file, answer) in seen.iter_mut().zip(answers) {
            file.push(answer);
        }
        tokio::time::sleep(PROBE_EVERY.saturating_sub(round.elapsed())).await;
    }
    seen
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
