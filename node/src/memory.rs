//! The node's memory budget (`ATRIUM_MEMORY_BUDGET`): new work is refused, with the
//! contract's codes, before the process grows past what it was told it may use.
//!
//! Two measures meet here. The process's resident memory, sampled every 10 ms, catches
//! everything; reservations, taken before a large allocation is made (a room's document
//! being loaded, a file's initial document being read), and growth counted as it is
//! admitted (large patches taken into rooms, new sockets, inflated text; counted until
//! two growth periods of samples have passed), catch what a sample would see too late.
//! Work is admitted while the sample plus what is reserved and grown stays under the
//! high-water mark (the budget less a tenth of it, and less at least 16 MiB), so the rest
//! is headroom for what is already running: sockets' queues, the patches of rooms that
//! are open, requests in flight.
//!
//! Refusing is all it does: nothing already accepted is dropped. Sockets get 1013
//! (try again later) or an HTTP 503 with `Retry-After` before the upgrade; requests
//! that would make large allocations get 503.

mod answers;
mod incoming;
mod reservation;
mod sizing;

pub use answers::{AnswerKey, HeldBody, Holder, SharedAnswers};
pub use incoming::{IncomingShares, SocketAllowance};
pub use reservation::Reservation;
pub use sizing::{default_budget, parse_size};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Work is admitted while the process stays this far under its budget: a tenth
/// of it, and at least [`MIN_HEADROOM`], for what is already running.
const HEADROOM: f64 = 0.1;
const MIN_HEADROOM: u64 = 16 << 20;
/// Empty tasks spawned to wake the runtime's idle workers when memory is to be given
/// back (each collects its heap as it parks again).
const WAKE_TASKS: usize = 4;
/// How often resident memory is sampled. Often: a burst of sockets (a hundred upgrades,
/// their first messages) took a node from 24 to 57 MiB within one 100 ms interval, every
/// admission in it judged by the sample before, and what is not promised (sockets' buffers,
/// inflated text) showed only after. A read of `/proc/self/status` costs microseconds.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// How often, at most, freed memory is given back while the node is near its mark.
const GIVE_BACK_EVERY: Duration = Duration::from_millis(200);
/// Growth admitted is counted for this many samples at least, twice at most: it can take
/// that long to be allocated (a patch waits for its room, a frame for its bytes).
const GROWTH_SAMPLES: u32 = 10;

pub struct MemoryGuard {
    budget: u64,
    /// Resident bytes at the last sample.
    rss: AtomicU64,
    /// Bytes promised to allocations that have not shown up in a sample yet.
    reserved: AtomicU64,
    /// Growth admitted in this growth period ([`GROWTH_SAMPLES`] samples) and the one before
    /// it (the patches or sockets a burst brings between two samples: without these, every
    /// one of them would be judged by a sample taken before any of them).
    grown: [AtomicU64; 2],
}

/// Memory a patch admitted into a room may come to, per byte of its ops' JSON: the
/// document's growth, its relay frame (kept in the recent-ops ring too), its text
/// waiting for the journal, and the parsed ops while it is applied.
const PATCH_BYTES_PER_JSON_BYTE: u64 = 6;

/// What a socket is counted for as it opens: about twice what an idle one holds
/// (docs/scaling.md, "Memory per connection"), for the buffers of its upgrade and first messages.
const SOCKET_BYTES: u64 = 32 << 10;

/// What a new connection is counted for as it opens: the most its request's head may hold
/// (`server::HEAD_BYTES`, 32 KiB) and its task. Thousands of connections sending heads they
/// never finish held hyper's default 400 KB each.
pub(crate) const CONNECTION_BYTES: u64 = 40 << 10;

/// What a large patch refused at the budget is told (`too-large`).
pub const AT_BUDGET: &str = "the server is at its memory budget: only small changes are taken now";

/// What parsing JSON may take per value in it: a parsed value is 32 bytes however short its
/// text (`0,` is two), its array's spare room from growing by doubling, and the copy while
/// that array moves (measured: a 1 MiB patch of `[0,0,…]` took about 30 MiB).
const PARSED_BYTES_PER_VALUE: u64 = 96;

/// Patches up to this size (everyday edits: a move, a color, a rename) are small: always
/// taken, even at the budget, since documents grow only by larger ones; rooms give them a
/// lane of their own.
pub const SMALL_PATCH: usize = 4096;

/// An upper estimate of the memory parsing `json` takes: its text, and
/// [`PARSED_BYTES_PER_VALUE`] for every value it may hold (a value starts the text, or
/// follows a `[`, `,` or `:`; those inside strings only make the estimate higher).
pub fn parse_cost(json: &[u8]) -> u64 {
    let values = 1 + json
        .iter()
        .filter(|b| matches!(b, b'[' | b',' | b':'))
        .count() as u64;
    json.len() as u64 + values * PARSED_BYTES_PER_VALUE
}

impl MemoryGuard {
    pub fn new(budget: u64) -> Arc<Self> {
        Arc::new(Self {
            budget,
            rss: AtomicU64::new(crate::stats::rss_bytes()),
            reserved: AtomicU64::new(0),
            grown: [AtomicU64::new(0), AtomicU64::new(0)],
        })
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    fn high_water(&self) -> u64 {
        let headroom = ((self.budget as f64 * HEADROOM) as u64).max(MIN_HEADROOM);
        self.budget.saturating_sub(headroom)
    }

    /// Resident bytes at the last sample.
    pub fn rss(&self) -> u64 {
        self.rss.load(Ordering::Acquire)
    }

    /// Resident memory as last sampled, plus growth admitted since (what reservations
    /// come on top of).
    fn sampled_and_grown(&self) -> u64 {
        self.rss() + self.grown[0].load(Ordering::Acquire) + self.grown[1].load(Ordering::Acquire)
    }

    /// Resident memory as last sampled, plus what is promised or admitted since.
    fn expected(&self) -> u64 {
        self.sampled_and_grown() + self.reserved.load(Ordering::Acquire)
    }

    /// Bytes promised to work under way (reservations not yet given back).
    pub fn promised(&self) -> u64 {
        self.reserved.load(Ordering::Acquire)
    }

    /// Whether new work may start now.
    pub fn admits(&self) -> bool {
        self.expected() < self.high_water()
    }

    /// Whether a new socket may open, its first buffers (the upgrade's, its task's, its
    /// first messages': [`SOCKET_BYTES`]) then counted as growth until samples show them.
    /// A hundred sockets arriving between two samples were each judged by the sample before
    /// them all.
    pub fn admits_socket(&self) -> bool {
        self.admit_growth(SOCKET_BYTES)
    }

    /// Whether a new connection may be served, its head's buffer ([`CONNECTION_BYTES`]) then
    /// counted as growth until samples show it.
    pub fn admits_connection(&self) -> bool {
        self.admit_growth(CONNECTION_BYTES)
    }

    /// Whether memory is within an eighth of the high-water mark: what can be let go
    /// (rooms nobody is in) goes now rather than when it would anyway.
    pub fn pressed(&self) -> bool {
        let high = self.high_water();
        self.expected() >= high - high / 8
    }

    /// Bytes that could be promised now before the high-water mark.
    pub fn room_left(&self) -> u64 {
        self.high_water().saturating_sub(self.expected())
    }

    /// Whether `bytes` could be promised now (nothing is promised).
    pub fn fits(&self, bytes: u64) -> bool {
        self.expected() + bytes <= self.high_water()
    }

    /// Whether a patch whose ops' JSON is `ops_json` bytes long may be taken into a room: a
    /// small one always; a larger one if its growth fits under the high-water mark, and that
    /// growth then counts until samples include it.
    pub fn admits_patch(&self, ops_json: usize) -> bool {
        ops_json <= SMALL_PATCH || self.admit_growth(ops_json as u64 * PATCH_BYTES_PER_JSON_BYTE)
    }

    /// Whether a patch's text may be parsed: parsed JSON can cost 30 times its text (an
    /// array of small numbers), and a parsed patch may wait for its room. A small one always;
    /// a larger one if what its parse may cost ([`parse_cost`]) fits. That cost is promised
    /// for as long as the answer is held: until the patch is refused, or applied and
    /// durable (then what stays is the document's growth, which the room counts). So a
    /// patch parsed only to be refused holds nothing afterwards (the sixth review kept a
    /// node "at its budget" at a third of it with refused patches' estimates alone).
    pub fn admits_parse(self: &Arc<Self>, text: &str) -> Option<ParseCost> {
        if text.len() <= SMALL_PATCH {
            return Some(ParseCost::small());
        }
        self.reserve(parse_cost(text.as_bytes()))
            .map(|r| ParseCost {
                promised: Some(r),
                inline: text.len() <= crate::lane::INLINE_BYTES,
            })
    }

    /// Admits growth of about `bytes` that stays (a patch that makes a document larger) if
    /// it fits under the high-water mark, and counts it until samples include it.
    fn admit_growth(&self, bytes: u64) -> bool {
        if !self.fits(bytes) {
            return false;
        }
        self.grew(bytes);
        true
    }

    /// Counts `bytes` of growth until two growth periods have passed.
    fn grew(&self, bytes: u64) {
        self.grown[0].fetch_add(bytes, Ordering::AcqRel);
    }

    /// A new sample that ends a growth period ([`GROWTH_SAMPLES`] samples): growth
    /// admitted two periods ago shows in it by now.
    fn sampled(&self, rss: u64) {
        self.rss.store(rss, Ordering::Release);
        let last = self.grown[0].swap(0, Ordering::AcqRel);
        self.grown[1].store(last, Ordering::Release);
    }

    /// Samples resident memory until the guard is dropped, on a thread of its own: on the
    /// runtime, the sampler waited behind the very burst it was to see (24 ms late while a
    /// hundred sockets arrived). Near the high-water mark, it also asks the allocator to
    /// give freed memory back to the system, so memory a finished burst left free does not
    /// keep the node refusing work.
    pub fn spawn_sampler(self: &Arc<Self>, metrics: Arc<crate::metrics::Metrics>) {
        let guard = Arc::downgrade(self);
        let runtime = tokio::runtime::Handle::current();
        let sampler = move || {
            let mut trimmed = std::time::Instant::now();
            for n in 1u32.. {
                std::thread::sleep(SAMPLE_EVERY);
                let Some(guard) = guard.upgrade() else { return };
                let rss = crate::stats::rss_bytes();
                if n % GROWTH_SAMPLES == 0 {
                    guard.sampled(rss);
                } else {
                    guard.rss.store(rss, Ordering::Release);
                }
                metrics.memory_rss.set(rss as i64);
                metrics.memory_promised.set(guard.promised() as i64);
                // From an eighth below the mark, where rooms nobody is in start to leave:
                // what they free must show, or the node stays refusing work it has room for.
                // Here, off the runtime's workers: purging the allocators' free pages (and
                // glibc's trim, which walks every arena) takes milliseconds on a large heap.
                if guard.pressed() && trimmed.elapsed() >= GIVE_BACK_EVERY {
                    trimmed = std::time::Instant::now();
                    crate::allocator::give_back_free_memory();
                    // Idle workers collect as they park again: a few empty tasks wake them.
                    for _ in 0..WAKE_TASKS {
                        drop(runtime.spawn(async {}));
                    }
                    guard
                        .rss
                        .store(crate::stats::rss_bytes(), Ordering::Release);
                }
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("memory-sampler".into())
            .spawn(sampler)
        {
            // Without it the budget sees no growth but what is promised: said loudly.
            tracing::error!(error = %e, "could not start the memory sampler");
        }
    }
}

/// What a patch's parse may cost, promised from the budget while the patch is held (none
/// for a small one); given back when dropped.
pub struct ParseCost {
    promised: Option<Reservation>,
    /// Parsed where it arrived (up to [`crate::lane::INLINE_BYTES`] of text), on one of the
    /// runtime's few workers.
    inline: bool,
}

impl ParseCost {
    /// Nothing promised (a message small enough to parse at any time).
    pub fn small() -> Self {
        Self {
            promised: None,
            inline: true,
        }
    }
}

impl Drop for ParseCost {
    /// The parsed patch is gone, but what it freed may stay resident for a while (the
    /// allocator keeps it for the thread that allocated it): a large one's promise is kept
    /// until samples show. An inline parse's is given back at once: what it freed is what
    /// the next parse on that worker takes, so however many follow, they stay resident as
    /// one per worker (at most a few MiB, within the headroom). Held on, the promises of a
    /// stream of such patches refused after their parse added up to the whole budget (the
    /// seventh review: 20 sockets of 60 KB patches kept the owner's creations 503 at 67 MiB
    /// resident of 256).
    fn drop(&mut self) {
        if let Some(promised) = self.promised.take() {
            if !self.inline {
                promised.hold_until_sampled();
            }
        }
    }
}

/// A large frame is read once its bytes fit, counted as growth until samples include them.
/// The bytes that then come count again as they arrive, with the text they become (a copy,
/// beside them for a moment): a frame that trickles in for longer than two growth periods
/// would otherwise come in uncounted (a suite run of a hundred sockets sending 1 MiB patches
/// went 24 MiB past the mark). What a fragmented message claims is not held for its life:
/// it may claim a megabyte and send 60 KB.
impl crate::ws::Allowance for MemoryGuard {
    fn admits(&self, bytes: usize) -> bool {
        self.admit_growth(bytes as u64)
    }

    fn arrived(&self, bytes: usize) {
        self.grew(FRAME_BYTES_PER_BYTE * bytes as u64);
    }

    /// Text a compressed message became is counted once it is larger than a small patch: a
    /// kilobyte on the wire may be 80 KB of text (the ratio's bound for a new socket), and
    /// thirty such sockets at once went unseen until a sample caught them.
    fn inflated(&self, bytes: usize) {
        if bytes > SMALL_PATCH {
            self.grew(bytes as u64);
        }
    }
}

/// What reading a large frame takes per byte that arrives: the byte, and the text made of it.
const FRAME_BYTES_PER_BYTE: u64 = 2;

#[cfg(test)]
mod tests;
