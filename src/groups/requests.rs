//! A group request on its coordinator shard: checked (the group id fits the offsets log),
//! loaded, then handed to the membership, offsets or transactional-offsets code that owns it.

use super::code as e;
use super::coordinator::{
    commit, delete, delete_offsets, describe, fetch_offsets, offsets_partition,
};
use super::host::Host;
use super::loading::ensure_loaded;
use super::membership;
use super::ops::{GroupOp, GroupReply};

pub async fn handle(shard: &Host, group: String, op: GroupOp) -> GroupReply {
    // Kafka's offsets log stores the name as an int16-length string: a longer one could
    // not be stored as given (native clients can send up to 64 KiB).
    if group.is_empty() || group.len() > super::records::MAX_STRING {
        return GroupReply::Code(e::INVALID_GROUP_ID);
    }
    let loaded = match offsets_partition(&**shard, &group) {
        Ok(p) => ensure_loaded(shard, p).await,
        Err(code) => Err(code),
    };
    if let Err(code) = loaded {
        return GroupReply::Code(code);
    }
    match op {
        GroupOp::Join(r) => GroupReply::Join(membership::join(shard, &group, r).await),
        GroupOp::Sync(r) => GroupReply::Sync(membership::sync(shard, &group, r).await),
        GroupOp::Heartbeat {
            member_id,
            group_instance_id: instance,
            generation,
        } => GroupReply::Code(membership::heartbeat(
            &group,
            &member_id,
            instance.as_deref(),
            generation,
        )),
        GroupOp::Leave { members } => {
            GroupReply::Code(membership::leave(shard, &group, &members).await)
        }
        GroupOp::Commit {
            member_id,
            group_instance_id: instance,
            generation,
            offsets,
        } => {
            let who = (member_id.as_str(), instance.as_deref());
            GroupReply::PartitionCodes(commit(shard, &group, who, generation, offsets).await)
        }
        GroupOp::TxnCommit {
            producer_id,
            epoch,
            member_id,
            group_instance_id: instance,
            generation,
            offsets,
        } => {
            let who = (member_id.as_str(), instance.as_deref());
            let producer = (producer_id, epoch);
            let codes =
                super::txn_offsets::commit(shard, &group, who, generation, producer, offsets);
            GroupReply::PartitionCodes(codes.await)
        }
        GroupOp::FetchOffsets {
            partitions,
            require_stable,
        } => match require_stable && super::txn_offsets::has_pending(&group) {
            true => GroupReply::Code(e::UNSTABLE_OFFSET_COMMIT),
            false => GroupReply::Offsets(fetch_offsets(&group, partitions)),
        },
        GroupOp::Describe => GroupReply::Described(describe(&group)),
        GroupOp::Delete => GroupReply::Code(delete(shard, &group).await),
        GroupOp::DeleteOffsets { partitions } => {
            GroupReply::PartitionCodes(delete_offsets(shard, &group, partitions).await)
        }
    }
}
