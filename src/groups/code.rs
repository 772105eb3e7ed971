//! What a group coordinator answers, typed: Kafka's group protocol outcomes, plus the
//! engine's own error when writing the offsets log failed (carried unchanged, not squeezed
//! into a Kafka number). Each front end maps it once: `kafka_codes::group_code` to Kafka's
//! numbers, `kafka_codes::native_group_code` to the native protocol's.
//!
//! The constants below give each outcome its Kafka name, so the state machine reads as
//! Kafka's coordinator does.

use crate::protocol::ErrorCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GroupCode {
    #[default]
    None,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    NotCoordinator,
    InvalidGroupId,
    IllegalGeneration,
    InconsistentGroupProtocol,
    UnknownMemberId,
    InvalidSessionTimeout,
    RebalanceInProgress,
    NonEmptyGroup,
    GroupIdNotFound,
    GroupSubscribedToTopic,
    MemberIdRequired,
    UnknownTopicOrPartition,
    OffsetMetadataTooLarge,
    /// Writing the offsets log failed: the engine's error.
    Log(ErrorCode),
}

impl GroupCode {
    pub fn is_ok(self) -> bool {
        self == GroupCode::None
    }
}

pub const NONE: GroupCode = GroupCode::None;
pub const COORDINATOR_LOAD_IN_PROGRESS: GroupCode = GroupCode::CoordinatorLoadInProgress;
pub const COORDINATOR_NOT_AVAILABLE: GroupCode = GroupCode::CoordinatorNotAvailable;
pub const NOT_COORDINATOR: GroupCode = GroupCode::NotCoordinator;
pub const INVALID_GROUP_ID: GroupCode = GroupCode::InvalidGroupId;
pub const ILLEGAL_GENERATION: GroupCode = GroupCode::IllegalGeneration;
pub const INCONSISTENT_GROUP_PROTOCOL: GroupCode = GroupCode::InconsistentGroupProtocol;
pub const UNKNOWN_MEMBER_ID: GroupCode = GroupCode::UnknownMemberId;
pub const INVALID_SESSION_TIMEOUT: GroupCode = GroupCode::InvalidSessionTimeout;
pub const REBALANCE_IN_PROGRESS: GroupCode = GroupCode::RebalanceInProgress;
pub const NON_EMPTY_GROUP: GroupCode = GroupCode::NonEmptyGroup;
pub const GROUP_ID_NOT_FOUND: GroupCode = GroupCode::GroupIdNotFound;
pub const GROUP_SUBSCRIBED_TO_TOPIC: GroupCode = GroupCode::GroupSubscribedToTopic;
pub const MEMBER_ID_REQUIRED: GroupCode = GroupCode::MemberIdRequired;
pub const UNKNOWN_TOPIC_OR_PARTITION: GroupCode = GroupCode::UnknownTopicOrPartition;
pub const OFFSET_METADATA_TOO_LARGE: GroupCode = GroupCode::OffsetMetadataTooLarge;
