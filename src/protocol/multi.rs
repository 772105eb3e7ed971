//! Multi-partition Produce and Fetch (PROTOCOL.md, keys 21 and 22): one request for many
//! partitions, as Kafka's Produce and Fetch carry, so a client pays one round trip for all
//! of them; the server runs them on their owner shards at once.

use bytes::Bytes;

use super::field::wire_struct;
use super::ErrorCode;
use crate::io::chain::ByteChain;

/// Most partitions one multi-partition request may name.
pub const MAX_PARTITIONS: usize = 1000;

wire_struct! {
    /// A partition's part of a MultiProduce.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ProduceEntry {
        pub topic: String = "topic name",
        pub partition: i32 = "partition",
        pub records: Bytes = "records",
    }
}

wire_struct! {
    /// A partition's part of a MultiFetch.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct FetchEntry {
        pub topic: String = "topic name",
        pub partition: i32 = "partition",
        pub offset: i64 = "offset",
        pub max_bytes: i32 = "partition max_bytes",
    }
}

/// A partition's outcome: `error` is `None` on success.
pub type PartitionError = Option<(ErrorCode, String)>;

wire_struct! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Produced {
        pub topic: String = "topic name",
        pub partition: i32 = "partition",
        pub error: PartitionError = "error",
        pub base_offset: i64 = "base_offset",
        pub last_offset: i64 = "last_offset",
        pub log_append_time: i64 = "log_append_time",
    }
}

wire_struct! {
    /// The records of each partition go into the frame as the slices they are.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Fetched {
        pub topic: String = "topic name",
        pub partition: i32 = "partition",
        pub error: PartitionError = "error",
        pub log_start_offset: i64 = "log_start_offset",
        pub log_end_offset: i64 = "log_end_offset",
        pub records: ByteChain = "records",
    }
}
