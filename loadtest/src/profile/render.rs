//! After the run: `perf script`, folded stacks and the flame graph.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use inferno::collapse::perf::{Folder, Options as FoldOptions};
use inferno::collapse::Collapse;
use inferno::flamegraph::{self, Palette};

use super::*;

/// Reads `dir/perf.data` with `perf script`, and writes the folded stacks and the flame graph.
pub fn render(perf: &Path, recorded: ProfileReport, title: &str) -> ProfileReport {
    let dir = recorded.dir.clone();
    let dir = dir.as_path();
    let mut report = ProfileReport {
        perf_data: Some(dir.join(PERF_DATA)),
        recorded_s: crate::measure::round3(recorded.recorded_s),
        ..recorded
    };
    if let Err(e) = render_inner(perf, dir, title, &mut report) {
        report.error = Some(format!("{e:#}"));
    }
    report
}

fn render_inner(perf: &Path, dir: &Path, title: &str, report: &mut ProfileReport) -> Result<()> {
    // Without a period column every sample counts 1; without inlined frames perf does not ask
    // addr2line about every address (seconds instead of minutes on a debug build).
    let out = Command::new(perf)
        .args([
            "script",
            "--no-inline",
            "-F",
            "comm,tid,time,event,ip,sym,dso",
        ])
        .arg("-i")
        .arg(dir.join(PERF_DATA))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {} script", perf.display()))?;
    if !out.status.success() {
        bail!(
            "perf script failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let folded = fold(&out.stdout)?;
    let (samples, stacks) = count(&folded);
    std::fs::write(dir.join(FOLDED), &folded)?;
    report.folded = Some(dir.join(FOLDED));
    report.samples = samples;
    report.stacks = stacks;
    if samples == 0 {
        bail!("perf recorded no samples of the node (was it idle, or did perf lose access?)");
    }
    let subtitle = format!(
        "{samples} samples at {FREQUENCY_HZ} Hz over {:.1} s",
        report.recorded_s
    );
    let svg = draw(&folded, title, &subtitle)?;
    let mut file = std::fs::File::create(dir.join(FLAMEGRAPH))?;
    file.write_all(&svg)?;
    report.flamegraph_svg = Some(dir.join(FLAMEGRAPH));
    Ok(())
}

/// Folds `perf script` output into `stack;frames;leaf count` lines.
pub fn fold(perf_script: &[u8]) -> Result<String> {
    let mut options = FoldOptions::default();
    options.nthreads = 1;
    let mut folder = Folder::from(options);
    let mut out = Vec::new();
    folder
        .collapse(perf_script, &mut out)
        .context("cannot fold perf script output")?;
    String::from_utf8(out).map_err(|e| anyhow!("folded stacks are not UTF-8: {e}"))
}

/// (samples, distinct stacks) of folded lines.
pub fn count(folded: &str) -> (u64, usize) {
    let mut samples = 0;
    let mut stacks = 0;
    for line in folded.lines() {
        if let Some(n) = line
            .rsplit_once(' ')
            .and_then(|(_, n)| n.trim().parse::<u64>().ok())
        {
            samples += n;
            stacks += 1;
        }
    }
    (samples, stacks)
}

/// Draws folded stacks as a flame graph SVG (it carries its own small script for zoom and
/// search, so it works opened on its own in a browser).
pub fn draw(folded: &str, title: &str, subtitle: &str) -> Result<Vec<u8>> {
    let mut options = flamegraph::Options::default();
    options.title = title.to_string();
    options.subtitle = Some(subtitle.to_string());
    options.colors = "rust".parse::<Palette>().unwrap_or_default();
    options.count_name = "samples".to_string();
    options.deterministic = true;
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut options, folded.lines(), &mut svg)
        .context("cannot draw the flame graph")?;
    Ok(svg)
}
