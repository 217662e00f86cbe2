//! `--restore-every`: restores during the measured window, so relay latency and convergence
//! around restores are measured like everything else. Each restore goes to the next file in
//! turn: the first time a file comes up, its current state is named (`POST
//! /api/files/{id}/versions`), and from then on that version is restored (`POST
//! .../versions/{vid}/restore`), with the file's edit key. The restore's own `patch` reaches
//! every client as any patch does (version gaps and, when tracking, the model check count it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::json;

use crate::http::{request_with_key, Endpoint};
use crate::measure::{round3, Summary};
use crate::setup::FileKeys;

/// How long one naming or restore may take before it counts as failed.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// What the restores did (`restores` in the JSON report).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Restores {
    /// Seconds between restores, as asked.
    pub every_s: f64,
    pub restored: u64,
    pub failed: u64,
    /// From the request to the answer, which comes once the restore is durable.
    pub restore_ms: Summary,
    /// The first few failures' reasons.
    pub errors: Vec<String>,
}

/// Restores until `stop`, one every `every` seconds; answers what they did.
pub async fn run(
    endpoint: Endpoint,
    files: Vec<FileKeys>,
    every: f64,
    stop: Arc<AtomicBool>,
) -> Restores {
    let mut out = Restores {
        every_s: every,
        ..Default::default()
    };
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    let mut named: HashMap<String, u64> = HashMap::new();
    let mut turn = 0usize;
    let fail = |out: &mut Restores, e: String| {
        out.failed += 1;
        if out.errors.len() < 5 {
            out.errors.push(e);
        }
    };
    while !stop.load(Ordering::Relaxed) && !files.is_empty() {
        let pause = tokio::time::sleep(Duration::from_secs_f64(every));
        tokio::pin!(pause);
        while !stop.load(Ordering::Relaxed) {
            tokio::select! {
                _ = &mut pause => break,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let f = &files[turn % files.len()];
        turn += 1;
        let vid = match named.get(&f.id) {
            Some(v) => *v,
            None => {
                let path = format!("/api/files/{}/versions", f.id);
                let body = json!({"title": "load tool"});
                let made = request_with_key(
                    &endpoint,
                    "POST",
                    &path,
                    &f.edit_key,
                    Some(&body),
                    ANSWER_WITHIN,
                )
                .await
                .and_then(|a| a.ok("name a version"));
                match made.map(|v| v["id"].as_u64()) {
                    Ok(Some(v)) => {
                        named.insert(f.id.clone(), v);
                        v
                    }
                    Ok(None) => {
                        fail(&mut out, "a named version without an id".into());
                        continue;
                    }
                    Err(e) => {
                        fail(&mut out, e.to_string());
                        continue;
                    }
                }
            }
        };
        let path = format!("/api/files/{}/versions/{vid}/restore", f.id);
        let t = Instant::now();
        let answer = request_with_key(&endpoint, "POST", &path, &f.edit_key, None, ANSWER_WITHIN)
            .await
            .and_then(|a| a.ok("restore"));
        match answer {
            Ok(_) => {
                out.restored += 1;
                let _ = latency.record((t.elapsed().as_micros() as u64).max(1));
            }
            Err(e) => fail(&mut out, e.to_string()),
        }
    }
    out.restore_ms = Summary::of(&latency);
    out.every_s = round3(every);
    out
}
