//! Open-loop schedules: when each client sends, fixed in advance from a start time.
//!
//! A schedule is a start, a period and a phase (an offset inside the period, so clients don't
//! all send at the same instant). Its ticks are `start + phase + k × period`. A client that
//! wakes up late sends once and skips the ticks it missed (counted), so a busy generator sends
//! less instead of sending bursts; answers never hold a send back.

use std::time::Duration;

/// A fixed schedule of ticks, in time relative to an arbitrary origin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    start: Duration,
    period: Duration,
    next: u64,
}

impl Schedule {
    /// Ticks at `start + phase × period + k × period`, with `phase` in [0, 1).
    /// A rate of 0 (or not finite) gives a schedule that never ticks.
    pub fn new(start: Duration, rate_per_s: f64, phase: f64) -> Option<Schedule> {
        if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
            return None;
        }
        let period = Duration::from_secs_f64(1.0 / rate_per_s);
        let offset = period.mul_f64(phase.clamp(0.0, 0.999_999));
        Some(Schedule {
            start: start + offset,
            period,
            next: 0,
        })
    }

    #[cfg(test)]
    pub fn period(&self) -> Duration {
        self.period
    }

    /// When the next tick is due.
    pub fn due(&self) -> Duration {
        self.start + self.period * u32::try_from(self.next).unwrap_or(u32::MAX)
    }

    /// Called when the client wakes up at `now` for the due tick: moves past every tick at or
    /// before `now` and returns how many were skipped (0 when on time).
    pub fn advance(&mut self, now: Duration) -> u64 {
        if now < self.due() {
            return 0;
        }
        let behind = (now - self.start).as_nanos() / self.period.as_nanos().max(1);
        let reached = behind as u64;
        let skipped = reached - self.next;
        self.next = reached + 1;
        skipped
    }
}

/// A phase in [0, 1) for client `index`, spread evenly (golden-ratio sequence) so that any
/// number of clients covers the period without bunching up.
pub fn phase(index: usize, salt: f64) -> f64 {
    const GOLDEN: f64 = 0.618_033_988_749_895;
    ((index as f64) * GOLDEN + salt).fract()
}

/// When client `index` opens its socket, at `ramp` connections a second from the start.
pub fn connect_at(index: usize, ramp: f64) -> Duration {
    Duration::from_secs_f64(index as f64 / ramp)
}

/// The effective presence rate: what the user asked for, at most what the server allows.
pub fn presence_rate(asked: f64, server_hz: Option<f64>) -> f64 {
    match server_hz {
        Some(hz) if hz >= 0.0 => asked.min(hz),
        _ => asked,
    }
}

#[cfg(test)]
mod tests;
