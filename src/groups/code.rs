//! What a group coordinator answers, typed: Kafka's group protocol outcomes, plus the
//! engine's own error when writing the offsets log failed (carried unchanged, not squeezed
//! into a Kafka number). One table maps it to Kafka's numbers (`kafka`), one to the native
//! protocol's codes (`native`).
//!
//! The constants below give each outcome its Kafka name, so the state machine reads as
//! Kafka's coordinator does.

use crate::kafka_codes as k;
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
    /// A static member's instance id is bound to another member id (KIP-345).
    FencedInstanceId,
    /// Offsets sent inside a transaction are waiting for its end (require_stable reads).
    UnstableOffsetCommit,
    /// Writing the offsets log failed: the engine's error.
    Log(ErrorCode),
}

impl GroupCode {
    pub fn is_ok(self) -> bool {
        self == GroupCode::None
    }

    /// Kafka's number for a group coordinator's answer.
    pub fn kafka(self) -> i16 {
        use GroupCode as G;
        match self {
            G::None => k::NONE,
            G::CoordinatorLoadInProgress => k::COORDINATOR_LOAD_IN_PROGRESS,
            G::CoordinatorNotAvailable => k::COORDINATOR_NOT_AVAILABLE,
            G::NotCoordinator => k::NOT_COORDINATOR,
            G::InvalidGroupId => k::INVALID_GROUP_ID,
            G::IllegalGeneration => k::ILLEGAL_GENERATION,
            G::InconsistentGroupProtocol => k::INCONSISTENT_GROUP_PROTOCOL,
            G::UnknownMemberId => k::UNKNOWN_MEMBER_ID,
            G::InvalidSessionTimeout => k::INVALID_SESSION_TIMEOUT,
            G::RebalanceInProgress => k::REBALANCE_IN_PROGRESS,
            G::NonEmptyGroup => k::NON_EMPTY_GROUP,
            G::GroupIdNotFound => k::GROUP_ID_NOT_FOUND,
            G::GroupSubscribedToTopic => k::GROUP_SUBSCRIBED_TO_TOPIC,
            G::MemberIdRequired => k::MEMBER_ID_REQUIRED,
            G::UnknownTopicOrPartition => k::UNKNOWN_TOPIC_OR_PARTITION,
            G::OffsetMetadataTooLarge => k::OFFSET_METADATA_TOO_LARGE,
            G::FencedInstanceId => k::FENCED_INSTANCE_ID,
            G::UnstableOffsetCommit => k::UNSTABLE_OFFSET_COMMIT,
            G::Log(engine) => k::kafka_code(engine, true),
        }
    }

    /// The native code for a group coordinator's answer (native clients commit from outside
    /// any group, so a group's membership codes mean "it is active"); the offsets log's own
    /// error passes through unchanged.
    pub fn native(self) -> ErrorCode {
        use GroupCode as G;
        match self {
            G::None => ErrorCode::None,
            G::UnknownTopicOrPartition => ErrorCode::UnknownTopic,
            G::UnknownMemberId
            | G::IllegalGeneration
            | G::RebalanceInProgress
            | G::NonEmptyGroup
            | G::GroupSubscribedToTopic => ErrorCode::GroupNotEmpty,
            G::GroupIdNotFound => ErrorCode::GroupNotFound,
            G::InvalidGroupId | G::OffsetMetadataTooLarge | G::FencedInstanceId => {
                ErrorCode::InvalidRequest
            }
            G::CoordinatorLoadInProgress
            | G::CoordinatorNotAvailable
            | G::NotCoordinator
            | G::UnstableOffsetCommit => ErrorCode::NotReady,
            G::Log(engine) => engine,
            G::InconsistentGroupProtocol | G::InvalidSessionTimeout | G::MemberIdRequired => {
                ErrorCode::Internal
            }
        }
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
pub const FENCED_INSTANCE_ID: GroupCode = GroupCode::FencedInstanceId;
pub const UNSTABLE_OFFSET_COMMIT: GroupCode = GroupCode::UnstableOffsetCommit;
