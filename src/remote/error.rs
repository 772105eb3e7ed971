//! What can go wrong with the object store, in the terms the broker acts on: retry later
//! (unavailable), a lost race for a conditional write, data that failed its check, or a
//! bucket this node must not write.

use crate::broker_error::BrokerError;
use crate::protocol::ErrorCode;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The store did not answer or answered with a server error: retriable.
    #[error("object store unavailable: {0}")]
    Unavailable(String),
    #[error("object not found: {0}")]
    NotFound(String),
    /// A create-only write found the key taken.
    #[error("object already exists: {0}")]
    AlreadyExists(String),
    /// A conditional write found the object changed since it was read.
    #[error("object changed since it was read: {0}")]
    Conflict(String),
    /// Bytes that failed their CRC, size or framing check; never served.
    #[error("corrupt remote object {key}: {what}")]
    Corrupt { key: String, what: String },
    /// A manifest this node must not overwrite (a newer format, another writer).
    #[error("refusing the manifest {key}: {why}")]
    Refused { key: String, why: String },
    /// A partition that has uploaded before has no manifest (deleted or lost) while its
    /// segment objects are there: starting a new, empty history would drop them from the
    /// log, so the partition's uploads and remote retention stop until it is rebuilt.
    #[error("the manifest {key} is missing but {objects} of the partition's segment objects are in the bucket: its uploads and remote retention are stopped so no acknowledged record is dropped; put the manifest object back (from the bucket's versioning or a backup), or rebuild it from the segment objects with `shardlog topics rebuild-manifest`")]
    ManifestMissing { key: String, objects: usize },
    /// A local file of the segment being copied could not be read.
    #[error("reading {0} for upload")]
    Local(String),
    /// A setting that does not name a usable store.
    #[error("remote storage settings: {0}")]
    Config(String),
}

impl RemoteError {
    pub(crate) fn from_store(what: &str, e: object_store::Error) -> Self {
        use object_store::Error as E;
        match e {
            E::NotFound { path, .. } => RemoteError::NotFound(path),
            E::AlreadyExists { path, .. } => RemoteError::AlreadyExists(path),
            E::Precondition { path, .. } => RemoteError::Conflict(path),
            other => RemoteError::Unavailable(format!("{what}: {other}")),
        }
    }

    pub(crate) fn corrupt(key: impl std::fmt::Display, what: impl Into<String>) -> Self {
        RemoteError::Corrupt {
            key: key.to_string(),
            what: what.into(),
        }
    }

    /// The broker's error for a client request that needed the remote tier: retriable
    /// storage errors for an unreachable store, corruption for bad bytes.
    pub fn to_broker(&self) -> BrokerError {
        let code = match self {
            RemoteError::Corrupt { .. } => ErrorCode::CorruptStorage,
            RemoteError::ManifestMissing { .. } => ErrorCode::RemoteManifestMissing,
            RemoteError::Config(_) | RemoteError::Refused { .. } => ErrorCode::InvalidConfig,
            _ => ErrorCode::StorageError,
        };
        BrokerError::new(code, format!("remote tier: {self}"))
    }
}
