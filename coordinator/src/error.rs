//! The one error type every backend returns.

use thiserror::Error;

use crate::types::{Invalid, NodeId};

/// What every coordinator call returns: the trait and its backends name only the value.
pub type Result<T, E = CoordinatorError> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CoordinatorError {
    /// Another node holds a live lease on the file; the caller should send the client there
    /// (or answer 4009) rather than wait.
    #[error("the lease is held by node {holder}")]
    Held { holder: NodeId },
    /// What the call relied on is gone: the lease lapsed or passed to another node, or this
    /// node's membership lapsed (join again). Retrying the same call cannot help.
    #[error("the lease or membership has lapsed or been taken over")]
    Lost,
    /// The coordinator could not be reached or answered with a failure; a retry may help.
    #[error("coordinator unavailable: {0}")]
    Unavailable(String),
    /// The caller passed something the coordinator will never accept.
    #[error("invalid coordinator request: {0}")]
    Invalid(String),
}

impl From<Invalid> for CoordinatorError {
    fn from(Invalid(why): Invalid) -> Self {
        Self::Invalid(why)
    }
}
