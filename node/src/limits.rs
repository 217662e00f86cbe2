//! Limits that keep one client (or one address, or one email) from taking more
//! than its share: token buckets, keyed buckets with a bounded memory, and
//! per-address socket counts.

mod address;
mod bucket;
mod keyed;
mod party;
mod quarters;
mod slots;

pub use address::{address_key, client_address, hop, Network};
pub use bucket::Bucket;
pub use keyed::{KeyedLimiter, Planned};
pub use party::Party;
pub use quarters::AddressQuarters;
pub use slots::{AddressCounts, AddressSlot, ConnectionCap, ConnectionSlot};

#[cfg(test)]
mod tests;
