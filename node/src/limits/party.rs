//! Who spends a file's allowances.

/// Whose allowance a file's namings, restores and version work spend: the owner's own, each
/// app-token person's own, and one for everyone who came by the link. A guest with the edit
/// key can use up the link's allowance, never the owner's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Party {
    Owner,
    /// An app token's person, by its `sub`.
    App(String),
    Link,
}
