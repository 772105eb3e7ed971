//! What can stop the catalog: the data directory held by another server, a port served by
//! another process, a metadata file that does not parse, an internal topic that is not as
//! the settings say, and the file operations of the start-up pass.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::broker_error::BrokerError;
use crate::config::NotKeyValue;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    #[error(
        "data directory {} is in use by another shardlog server (pid {}); stop it or choose another --data-dir",
        dir.display(),
        holder.as_deref().unwrap_or("unknown")
    )]
    DataDirInUse {
        dir: PathBuf,
        holder: Option<String>,
    },
    #[error("locking {}: {source}", path.display())]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{addr}: port {} is already served by another process (pid {pid}; is another shardlog server running?)",
        addr.port()
    )]
    PortInUse { addr: SocketAddr, pid: u32 },
    /// A file operation of the catalog failed.
    #[error("{what} in {}: {source}", dir.display())]
    Io {
        what: &'static str,
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {why}", path.display())]
    Metadata { path: PathBuf, why: MetadataError },
    #[error(
        "{topic} has {on_disk} partitions but offsets.topic.num.partitions is {configured}: groups would \
         move to other partitions and lose their committed offsets; set \
         offsets.topic.num.partitions={on_disk} (it is fixed once the topic exists)"
    )]
    InternalPartitions {
        topic: String,
        on_disk: i32,
        configured: i32,
    },
    #[error(
        "{topic} has cleanup.policy={policy} but must be compacted: its commits would be deleted by retention"
    )]
    InternalNotCompacted { topic: String, policy: &'static str },
    #[error(transparent)]
    BrokerDefaults(#[from] LoadError),
    /// A partition of a topic on disk could not be opened.
    #[error("opening topic {topic}: {}", why.message())]
    Open { topic: String, why: BrokerError },
}

impl CatalogError {
    /// A failed file operation, naming what was being done and where.
    pub fn io(what: &'static str, dir: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self {
        let dir = dir.to_path_buf();
        move |source| CatalogError::Io { what, dir, source }
    }
}

/// Why a topic's metadata file does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error(transparent)]
    NotKeyValue(#[from] NotKeyValue),
    #[error("missing or bad {0}")]
    MissingOrBad(&'static str),
    #[error("partitions={count} is outside 1..={max}")]
    PartitionCount { count: u32, max: u32 },
    /// The name or a config the file records is refused by the rules a create applies.
    #[error("{}", .0.message())]
    Refused(BrokerError),
    /// A metadata file is `<name>.properties` of the topic it records; a copy under another
    /// name would give the topic twice.
    #[error("the file records topic {recorded:?}, not the one its name says")]
    NameMismatch { recorded: String },
}

/// A topic name the catalog does not hold (answered per topic, never fatal).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown topic {0}")]
pub struct UnknownTopic(pub String);

/// The broker config file could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dynamic broker configs {}: {why}", path.display())]
pub struct LoadError {
    pub path: PathBuf,
    pub why: String,
}
