//! Pure, I/O-free codecs for the bytes shardlog stores: Kafka RecordBatch v2, its records,
//! and the zigzag varints they use. Everything here validates its input and returns a typed
//! [`BatchError`](crate::format::BatchError) instead of panicking.

pub mod batch;
pub mod builder;
pub mod compression;
pub mod control;
pub mod cursor;
mod doc_check;
pub mod error;
pub mod header;
pub mod record;
pub mod retain;
pub mod schema_string;
pub mod varint;

pub use batch::{BatchHeader, TimestampType, HEADER_SIZE, MAGIC_V2};
pub use builder::{BatchBuilder, RecordSpec};
pub use error::BatchError;
pub use record::{HeaderIter, Record, RecordHeader, RecordHeaders};
