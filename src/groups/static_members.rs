//! Static membership (KIP-345): a member that names a `group.instance.id` keeps its place
//! across restarts. Rejoining with its instance id (and no member id) it takes over its
//! old member's place under a new member id, without a rebalance when the group is
//! Stable, its protocols are unchanged and it did not lead (a leader must hand out
//! assignments again, so it rebalances); the old member id is fenced: whatever it sends
//! afterwards gets FENCED_INSTANCE_ID, so a zombie cannot take the place back.

use super::code::{self as e, GroupCode};
use super::group::{Group, State};
use super::ops::{JoinRequest, JoinResponse};

/// The member id an instance id is bound to now.
pub fn member_of(g: &Group, instance: &str) -> Option<String> {
    g.members
        .iter()
        .find(|(_, m)| m.group_instance_id.as_deref() == Some(instance))
        .map(|(id, _)| id.clone())
}

/// FENCED_INSTANCE_ID when `instance` is bound to another member than `member_id`.
pub fn check_fenced(g: &Group, member_id: &str, instance: Option<&str>) -> GroupCode {
    match instance.and_then(|i| member_of(g, i)) {
        Some(bound) if bound != member_id => e::FENCED_INSTANCE_ID,
        _ => e::NONE,
    }
}

/// What a JoinGroup with an instance id becomes.
#[non_exhaustive]
pub enum StaticJoin {
    /// Answer at once (fenced, or rejoined into a Stable group without a rebalance).
    Answer(JoinResponse),
    /// Join as an ordinary member under this member id.
    Join(String),
}

/// A JoinGroup naming `instance`; `new_id` makes a member id for it when it needs one.
pub fn join(g: &mut Group, req: &JoinRequest, instance: &str, new_id: String) -> StaticJoin {
    let bound = member_of(g, instance);
    let error = |code| {
        StaticJoin::Answer(JoinResponse {
            error: code,
            member_id: req.member_id.clone(),
            generation: -1,
            ..Default::default()
        })
    };
    match bound {
        // A known member id must be the instance's current one.
        Some(old) if !req.member_id.is_empty() && old != req.member_id => {
            error(e::FENCED_INSTANCE_ID)
        }
        Some(old) if !req.member_id.is_empty() => StaticJoin::Join(old),
        Some(old) => replace(g, req, old, new_id),
        None if !req.member_id.is_empty() => error(e::UNKNOWN_MEMBER_ID),
        None => StaticJoin::Join(new_id),
    }
}

/// The instance restarted: its member moves to `new_id` (the old id is fenced from now on).
fn replace(g: &mut Group, req: &JoinRequest, old: String, new_id: String) -> StaticJoin {
    let mut member = g.members.remove(&old).expect("bound to a member");
    let was_leader = g.leader.as_deref() == Some(old.as_str());
    let unchanged = g.state == State::Stable && member.protocols == req.protocols && !was_leader;
    drop((member.join_waiter.take(), member.sync_waiter.take()));
    member.touch();
    g.members.insert(new_id.clone(), member);
    if was_leader {
        g.leader = Some(new_id.clone());
    }
    assert!(!g.members.contains_key(&old), "the old member id is gone");
    if !unchanged {
        return StaticJoin::Join(new_id);
    }
    StaticJoin::Answer(JoinResponse {
        error: e::NONE,
        generation: g.generation,
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol.clone(),
        leader: g.leader.clone().unwrap_or_default(),
        member_id: new_id,
        members: Vec::new(),
    })
}
