//! Messages shards exchange over glommio's channel mesh. Everything here is `Send`: it
//! crosses cores by value; nothing is shared.

use bytes::Bytes;

use super::topics::TopicMeta;
use crate::protocol::ErrorCode;

/// An operation on one partition, executed by its owner shard.
#[derive(Debug, Clone)]
pub enum PartitionOp {
    Produce { acks: i16, records: Bytes },
    Fetch { offset: i64, max_bytes: usize },
    ListOffsets { timestamp: i64 },
}

/// Successful outcomes.
#[derive(Debug, Clone)]
pub enum OpOk {
    Produced {
        base_offset: i64,
        last_offset: i64,
        log_append_time: i64,
    },
    Fetched {
        log_start_offset: i64,
        log_end_offset: i64,
        records: Bytes,
    },
    Offset {
        offset: i64,
        timestamp: i64,
    },
    Done,
}

pub type OpResult = Result<OpOk, (ErrorCode, String)>;

/// A topic change the controller (shard 0) applies on every shard.
#[derive(Debug, Clone)]
pub enum TopicChange {
    Created(TopicMeta),
    Deleted(String),
}

#[derive(Debug, Clone)]
pub enum ShardOp {
    Partition {
        topic: String,
        partition: u32,
        op: PartitionOp,
    },
    CreateTopic {
        name: String,
        partitions: i32,
        configs: Vec<(String, String)>,
    },
    DeleteTopic {
        name: String,
    },
    Apply(TopicChange),
    /// "I have no connections left": sent by each shard at shutdown, so partitions close only
    /// after no shard can forward to them any more.
    Drained,
}

#[derive(Debug)]
pub enum MeshMsg {
    Request { id: u64, from: usize, op: ShardOp },
    Response { id: u64, result: OpResult },
}
