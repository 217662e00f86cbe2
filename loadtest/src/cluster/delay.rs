//! Packets held back by the kernel's queue: an iptables `NFQUEUE` rule, in a chain of the
//! run's own (`ATRIUM_LT_<pid>_<n>` in the mangle table), hands matching packets to this process,
//! which gives each back unchanged once it has waited the delay. The kernel keeps the packet
//! meanwhile; the process only sees its metadata and says when.
//!
//! This stands in for `tc netem delay`, which needs `sch_netem`, a module this kernel family
//! often lacks; nftables' own `queue` expression is missing from the same kernels, the
//! iptables target is there. Packets leave in the order they came, each `delay` after it was
//! queued, so a TCP stream sees a longer round trip, not reordering. The rule says
//! `--queue-bypass`: with nobody bound to the queue (the run ended, or died) packets pass as
//! if it were not there.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::process::Command;

use anyhow::{Context, Result};

/// Packets a queue holds at most; past it the kernel lets new ones through undelayed (fail
/// open), so a burst cannot turn the delay into loss.
const MAX_HELD: u32 = 20_000;

/// The iptables chains of a run: this, its process id and a number.
const CHAIN_PREFIX: &str = "ATRIUM_LT_";
static NEXT_CHAIN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Packets to some ports delayed: the rule that queues them and the thread that holds them.
/// Dropping it removes the rule and gives back what is held.
pub struct Delayer {
    chain: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Delayer {
    /// Holds every packet sent to one of `ports` for `delay`.
    pub fn start(ports: &[u16], delay: Duration) -> Result<Delayer> {
        let list: Vec<String> = ports.iter().map(u16::to_string).collect();
        let list = list.join(",");
        Self::start_matching(&["-p", "tcp", "-m", "multiport", "--dports", &list], delay)
    }

    /// Holds every TCP packet from local port `from` to local port `to` for `delay`: one
    /// direction of one connection on loopback.
    pub fn start_one_way(from: u16, to: u16, delay: Duration) -> Result<Delayer> {
        let (from, to) = (from.to_string(), to.to_string());
        Self::start_matching(&["-p", "tcp", "--sport", &from, "--dport", &to], delay)
    }

    /// Holds every packet matching `matches` (iptables match arguments) for `delay`.
    fn start_matching(matches: &[&str], delay: Duration) -> Result<Delayer> {
        let (queue, thread, stop) = Self::bind(delay)?;
        let delayer = Delayer {
            chain: format!(
                "{CHAIN_PREFIX}{}_{}",
                std::process::id(),
                NEXT_CHAIN.fetch_add(1, Ordering::Relaxed)
            ),
            stop,
            thread: Some(thread),
        };
        let chain = delayer.chain.as_str();
        iptables(&["-t", "mangle", "-N", chain]).context(
            "delays queue packets with iptables: install it (`apt-get install iptables`; \
             scripts/test.sh does) and run as root",
        )?;
        let queue = queue.to_string();
        let mut rule = vec!["-t", "mangle", "-A", chain];
        rule.extend_from_slice(matches);
        rule.extend_from_slice(&["-j", "NFQUEUE", "--queue-num", &queue, "--queue-bypass"]);
        iptables(&rule)?;
        iptables(&["-t", "mangle", "-I", "OUTPUT", "-j", chain])?;
        Ok(delayer)
    }

    /// Binds a free queue number (starting from one drawn from the process id, so parallel
    /// runs do not meet) and starts delaying what arrives on it by `delay`.
    fn bind(delay: Duration) -> Result<(u16, JoinHandle<()>, Arc<AtomicBool>)> {
        let mut q = nfq::Queue::open()
            .context("delays use NFQUEUE: cannot open a netfilter netlink socket (root?)")?;
        let first = (std::process::id() % 60_000) as u16 + 1000;
        let queue = (first..first.saturating_add(64))
            .find(|n| q.bind(*n).is_ok())
            .context("no free NFQUEUE number")?;
        // Metadata only: the packet stays in the kernel, unchanged.
        q.set_copy_range(queue, 0)?;
        q.set_queue_max_len(queue, MAX_HELD)?;
        q.set_fail_open(queue, true)?;
        q.set_nonblocking(true);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new().name("lt-delay".into()).spawn({
            let stop = stop.clone();
            move || hold_and_release(q, queue, delay, &stop)
        })?;
        Ok((queue, thread, stop))
    }
}

impl Drop for Delayer {
    fn drop(&mut self) {
        remove_chain(&self.chain);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Receives queued packets and gives each back `delay` after it came, until `stop`; then
/// gives back whatever it still holds at once.
fn hold_and_release(mut q: nfq::Queue, queue: u16, delay: Duration, stop: &AtomicBool) {
    let mut held: VecDeque<(Instant, nfq::Message)> = VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while held.front().is_some_and(|(due, _)| *due <= now) {
            let (_, msg) = held.pop_front().expect("front exists");
            accept(&mut q, msg);
        }
        // The crate does not lend its socket to poll on: look again in a millisecond (a 10 s
        // fault window costs some ten thousand empty reads).
        std::thread::sleep(Duration::from_millis(1));
        loop {
            match q.recv() {
                Ok(msg) => held.push_back((Instant::now() + delay, msg)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing_free_warn(&format!("reading NFQUEUE {queue}: {e}"));
                    break;
                }
            }
        }
    }
    for (_, msg) in held.drain(..) {
        accept(&mut q, msg);
    }
    let _ = q.unbind(queue);
}

fn accept(q: &mut nfq::Queue, mut msg: nfq::Message) {
    msg.set_verdict(nfq::Verdict::Accept);
    // A verdict for a packet the kernel gave up on (its socket closed) fails harmlessly.
    let _ = q.verdict(msg);
}

/// The load tool reports on stderr; a delayer that fails lets packets pass undelayed (the
/// rule's `bypass`), which the run's figures would not show, so say it.
fn tracing_free_warn(msg: &str) {
    eprintln!("atrium-loadtest: delay stopped: {msg}");
}

fn iptables(args: &[&str]) -> Result<()> {
    super::filter::run("iptables", args)
}

/// Takes a run's chain out of OUTPUT and removes it.
fn remove_chain(chain: &str) {
    while iptables(&["-t", "mangle", "-D", "OUTPUT", "-j", chain]).is_ok() {}
    let _ = iptables(&["-t", "mangle", "-F", chain]);
    let _ = iptables(&["-t", "mangle", "-X", chain]);
}

/// Removes the chains of earlier runs whose process is gone.
pub fn sweep_stale(dead: impl Fn(&str) -> bool) {
    if let Ok(out) = Command::new("iptables")
        .args(["-t", "mangle", "-S"])
        .output()
    {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = line.trim().strip_prefix(&format!("-N {CHAIN_PREFIX}")) {
                let pid = name.split('_').next().unwrap_or(name);
                if dead(pid) {
                    remove_chain(&format!("{CHAIN_PREFIX}{name}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs root, iptables and NFQUEUE, as the fault suite does.
    #[test]
    fn a_delay_holds_every_packet_back_until_dropped() {
        use std::io::{Read, Write};
        use std::time::{Duration, Instant};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut s = stream.unwrap();
                let mut b = [0u8; 1];
                while s.read_exact(&mut b).is_ok() && s.write_all(&b).is_ok() {}
            }
        });
        let echo = |s: &mut std::net::TcpStream| {
            let t = Instant::now();
            s.write_all(b"x").unwrap();
            let mut b = [0u8; 1];
            s.read_exact(&mut b).unwrap();
            t.elapsed()
        };
        let delayer = Delayer::start(&[port], Duration::from_millis(200)).unwrap();
        let chain = delayer.chain.clone();
        let t = Instant::now();
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        // The SYN waited.
        assert!(
            t.elapsed() >= Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        for _ in 0..3 {
            let rtt = echo(&mut s);
            assert!(rtt >= Duration::from_millis(200), "a round trip of {rtt:?}");
        }
        drop(delayer);
        echo(&mut s);
        let rules = Command::new("iptables")
            .args(["-t", "mangle", "-S"])
            .output()
            .unwrap();
        let rules = String::from_utf8_lossy(&rules.stdout);
        assert!(
            !rules.contains(&chain),
            "the chain outlived the delayer:\n{rules}"
        );
    }
}
