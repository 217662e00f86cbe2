//! Capped counts of open connections: node-wide, and per client address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::address_key;

/// Open TCP connections of the node (HTTP and sockets together), capped: each
/// accepted connection holds a slot until its stream is gone (an upgraded socket
/// keeps its connection's slot for its whole life).
pub struct ConnectionCap {
    cap: usize,
    open: std::sync::atomic::AtomicUsize,
}

impl ConnectionCap {
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            open: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// A slot for a new connection; `None` at the cap.
    pub fn take(self: &Arc<Self>) -> Option<ConnectionSlot> {
        use std::sync::atomic::Ordering;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            })
            .ok()
            .map(|_| ConnectionSlot {
                cap: self.clone(),
                address: None,
            })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn cap(&self) -> usize {
        self.cap
    }
}

/// One connection's slot, given back when dropped, with its place among its
/// address's connections when those are capped.
pub struct ConnectionSlot {
    cap: Arc<ConnectionCap>,
    address: Option<AddressSlot>,
}

impl ConnectionSlot {
    /// Holds `address` (the connection's place under its address's cap) as long as this.
    pub fn with_address(mut self, address: AddressSlot) -> Self {
        self.address = Some(address);
        self
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.cap
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Open sockets (or connections) per client address, capped.
pub struct AddressCounts {
    cap: usize,
    counts: Mutex<HashMap<IpAddr, usize>>,
}

impl AddressCounts {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a slot for `addr`; `None` when the address is at its cap. The slot
    /// is given back when the returned guard drops.
    pub fn take(self: &Arc<Self>, addr: IpAddr) -> Option<AddressSlot> {
        // IPv6 counts by /64 (see `address_key`).
        let addr = address_key(addr);
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(addr).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            owner: self.clone(),
            addr,
        })
    }
}

pub struct AddressSlot {
    owner: Arc<AddressCounts>,
    addr: IpAddr,
}

impl AddressSlot {
    /// The address it counts for (its limit key).
    pub fn address(&self) -> IpAddr {
        self.addr
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut counts = self.owner.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.addr);
            }
        }
    }
}
