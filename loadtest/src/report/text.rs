//! The report as text: the run, its latencies, rates and problems.

use std::fmt::Write;

use super::{codes, line, Report};

impl Report {
    /// The readable report.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let w = &mut out;
        self.text_head(w);
        self.text_latency(w);
        self.text_rates(w);
        self.text_problems(w);
        self.text_server(w);
        self.text_generator(w);
        self.text_profile(w);
        self.text_cluster(w);
        self.text_failover(w);
        self.text_restores(w);
        self.text_server_patches(w);
        self.text_drop(w);
        out
    }

    /// The title and the run's shape.
    pub(super) fn text_head(&self, w: &mut String) {
        let title = if self.label.is_empty() {
            "atrium-loadtest".to_string()
        } else {
            format!("atrium-loadtest: {}", self.label)
        };
        let _ = writeln!(w, "\n== {title} ==");
        let _ = writeln!(
            w,
            "target {} | {} users ({} connected in {:.1} s{}) in {} files of {} pages | {} editors at \
             {}/s | presence {}/s | {} s measured after {} s warm-up",
            self.target,
            self.users,
            self.connected,
            self.connect_s,
            if self.storm { ", all at once" } else { "" },
            self.files,
            self.pages,
            self.editors,
            self.edit_rate,
            self.presence_rate,
            self.duration_s,
            self.warmup_s
        );
    }

    /// Latency percentiles.
    pub(super) fn text_latency(&self, w: &mut String) {
        let _ = writeln!(w, "\nLatency");
        let _ = writeln!(w, "  patch relay  {}", line(&self.patch_relay_ms));
        let _ = writeln!(w, "  patch ack    {}", line(&self.patch_ack_ms));
        let _ = writeln!(w, "  presence     {}", line(&self.presence_ms));
    }

    /// Rates a second, against what the schedule asked for.
    pub(super) fn text_rates(&self, w: &mut String) {
        let r = &self.rates;
        let e = &self.expected;
        let _ = writeln!(w, "\nRates (a second)");
        let _ = writeln!(
            w,
            "  patches sent {:.0} (scheduled {:.0}), acked {:.0}, received {:.0} (expected {:.0})",
            r.patches_sent_per_s,
            e.patches_sent_per_s,
            r.acks_received_per_s,
            r.patches_received_per_s,
            e.patches_received_per_s
        );
        let _ = writeln!(
            w,
            "  presence sent {:.0} (scheduled {:.0}), presence messages received {:.0}",
            r.presence_sent_per_s, e.presence_sent_per_s, r.presence_received_per_s
        );
        let _ = writeln!(
            w,
            "  messages sent {:.0}, received {:.0} ({:.2} MB)",
            r.messages_sent_per_s, r.messages_received_per_s, r.mb_received_per_s
        );
    }

    /// Problems: drops, reorderings, closes and errors.
    pub(super) fn text_problems(&self, w: &mut String) {
        let p = &self.problems;
        let _ = writeln!(w, "\nProblems");
        let _ = writeln!(
            w,
            "  dropped patches {} | out of order {} | unacked at the end {} | sends skipped {}",
            p.dropped_patches, p.out_of_order, p.unacked_patches, p.sends_skipped
        );
        let _ = writeln!(
            w,
            "  unexpected closes: {} | connection errors {} | handshakes reset {}",
            codes(&p.unexpected_closes),
            p.connection_errors,
            p.handshake_resets
        );
        let _ = writeln!(
            w,
            "  rate-limited notices {} | notices: {} | rejects {} ({}) | joined as viewer {}",
            p.rate_limited,
            codes(&p.notices),
            p.rejected,
            codes(&p.rejects),
            p.joined_as_viewer
        );
    }
}
