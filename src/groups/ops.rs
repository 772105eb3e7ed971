//! What a group request asks its coordinator shard and what it answers. Everything here
//! crosses shards by value over the mesh (`Send`); outcomes are typed (`code::GroupCode`),
//! mapped to each protocol's numbers by its front end.

use bytes::Bytes;

use super::code::GroupCode;
use crate::TopicPartition;

#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// (protocol name, opaque metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a new member first gets an id with MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
}

#[derive(Debug, Clone, Default)]
pub struct JoinResponse {
    pub error: GroupCode,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// For the leader only: (member id, group instance id, metadata of the chosen protocol).
    pub members: Vec<(String, Option<String>, Bytes)>,
}

#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub member_id: String,
    /// Its static instance id (KIP-345), if it has one.
    pub group_instance_id: Option<String>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// From the leader: every member's assignment.
    pub assignments: Vec<(String, Bytes)>,
}

#[derive(Debug, Clone, Default)]
pub struct SyncResponse {
    pub error: GroupCode,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

/// One committed position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
}

/// One partition's commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetToCommit {
    pub tp: TopicPartition,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum GroupOp {
    Join(JoinRequest),
    Sync(SyncRequest),
    Heartbeat {
        member_id: String,
        group_instance_id: Option<String>,
        generation: i32,
    },
    /// (member id, instance id): a static member may leave by its instance id alone.
    Leave {
        members: Vec<(String, Option<String>)>,
    },
    Commit {
        member_id: String,
        group_instance_id: Option<String>,
        generation: i32,
        offsets: Vec<OffsetToCommit>,
    },
    /// Offsets sent inside a producer's transaction (Kafka's TxnOffsetCommit): written now
    /// as the producer's transactional batch, in force once its commit marker is written.
    TxnCommit {
        producer_id: i64,
        epoch: i16,
        member_id: String,
        group_instance_id: Option<String>,
        generation: i32,
        offsets: Vec<OffsetToCommit>,
    },
    /// `None`: every partition the group committed. `require_stable`: UNSTABLE_OFFSET_COMMIT
    /// while offsets the group was sent inside a transaction wait for its end.
    FetchOffsets {
        partitions: Option<Vec<TopicPartition>>,
        require_stable: bool,
    },
    Describe,
    Delete,
    /// Remove the commits of these partitions (kafka-consumer-groups --delete-offsets).
    DeleteOffsets {
        partitions: Vec<TopicPartition>,
    },
}

#[derive(Debug, Clone, Default)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, Default)]
pub struct GroupDescription {
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberDescription>,
}

/// (group, protocol type, state name)
pub type ListedGroup = (String, String, String);

#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum GroupReply {
    Join(JoinResponse),
    Sync(SyncResponse),
    /// Heartbeat, LeaveGroup, DeleteGroups: just an error code (0: done).
    Code(GroupCode),
    /// Per partition of a commit or an offsets deletion: (topic, partition, error code).
    PartitionCodes(Vec<(TopicPartition, GroupCode)>),
    Offsets(Vec<(TopicPartition, Option<Committed>)>),
    Described(GroupDescription),
    Listed(Vec<ListedGroup>),
}
