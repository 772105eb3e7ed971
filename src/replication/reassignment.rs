//! Kafka's partition reassignment (KIP-455, as KRaft's controller runs it), as pure
//! functions of a partition's state: a reassignment adds the target's new replicas to the
//! replica set (`adding`) and marks the ones leaving (`removing`); once every new replica
//! is in the ISR it completes: the replicas become the target, the ISR keeps only target
//! members, and a leader outside the target hands over to the first in-sync target
//! replica. A cancel goes back to the original replicas. Each result is written by the
//! controller with a compare-and-swap, so a reassignment lives in the partition's state
//! and survives a controller failover.

use super::controller::Liveness;
use super::{NodeId, PartitionState};

/// Why a reassignment asked for changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReassignRefused {
    /// Kafka's INVALID_REPLICA_ASSIGNMENT (39), with its text.
    #[error("{0}")]
    Invalid(String),
    #[error("no reassignment is in progress for this partition (NO_REASSIGNMENT_IN_PROGRESS)")]
    NoneInProgress,
}

/// Kafka's checks of a manual assignment: not empty, no broker twice, every broker
/// registered (live here: a dead node's registration is gone with its lease).
pub fn check_target(target: &[NodeId], brokers: &impl Liveness) -> Result<(), ReassignRefused> {
    let invalid = |why: String| Err(ReassignRefused::Invalid(why));
    if target.is_empty() {
        return invalid("The manual partition assignment includes an empty replica list.".into());
    }
    for (i, &b) in target.iter().enumerate() {
        if target[..i].contains(&b) {
            return invalid(format!(
                "The manual partition assignment includes the broker {b} more than once."
            ));
        }
        if brokers.epoch(b).is_none() {
            return invalid(format!("The manual partition assignment includes broker {b}, but no such broker is registered."));
        }
    }
    Ok(())
}

/// Starts (or replaces) a reassignment to `target`: None when the partition is already
/// there. A target that only drops or reorders replicas completes at once.
pub fn start(
    state: &PartitionState,
    target: &[NodeId],
    brokers: &impl Liveness,
) -> Result<Option<PartitionState>, ReassignRefused> {
    check_target(target, brokers)?;
    let original = state.original();
    if state.target() == target && (state.reassigning() || state.replicas == target) {
        return Ok(None);
    }
    let leaving = original.iter().filter(|r| !target.contains(r));
    let merged: Vec<NodeId> = target.iter().chain(leaving.clone()).copied().collect();
    let adding: Vec<NodeId> = target
        .iter()
        .filter(|r| !original.contains(r))
        .copied()
        .collect();
    let moving = Moving {
        replicas: merged,
        adding,
        removing: leaving.copied().collect(),
    };
    let next = onto(state, moving, brokers).ok_or_else(|| {
        ReassignRefused::Invalid("no in-sync replica would be left to lead the partition".into())
    })?;
    Ok(Some(complete(&next, brokers).unwrap_or(next)))
}

/// Cancels the reassignment under way (Kafka's replicas = null): back to the original
/// replicas, the new ones out of the ISR. As KRaft reverts: the replicas less the new
/// ones, in the order they are held (the target's order first).
pub fn cancel(
    state: &PartitionState,
    brokers: &impl Liveness,
) -> Result<PartitionState, ReassignRefused> {
    if !state.reassigning() {
        return Err(ReassignRefused::NoneInProgress);
    }
    let moving = Moving {
        replicas: state.original(),
        adding: Vec::new(),
        removing: Vec::new(),
    };
    onto(state, moving, brokers).ok_or_else(|| {
        ReassignRefused::Invalid("no original replica is in sync to lead the partition".into())
    })
}

/// The reassignment's end once every new replica is in the ISR (None: not yet, or
/// nothing under way): the target alone, its in-sync members the ISR.
pub fn complete(state: &PartitionState, brokers: &impl Liveness) -> Option<PartitionState> {
    let caught_up = state.adding.iter().all(|r| state.isr.contains(r));
    if !state.reassigning() || !caught_up {
        return None;
    }
    let moving = Moving {
        replicas: state.target(),
        adding: Vec::new(),
        removing: Vec::new(),
    };
    onto(state, moving, brokers)
}

/// A replica set a partition moves onto.
struct Moving {
    replicas: Vec<NodeId>,
    adding: Vec<NodeId>,
    removing: Vec<NodeId>,
}

/// `state` on the replica set `moving`: the ISR without the replicas outside it, and a
/// new leader (the first in-sync replica in order, staying ones first) if the leader is
/// outside it. None when no in-sync replica would be left.
fn onto(state: &PartitionState, moving: Moving, brokers: &impl Liveness) -> Option<PartitionState> {
    let Moving {
        replicas,
        adding,
        removing,
    } = moving;
    let isr: Vec<NodeId> = (state.isr.iter())
        .filter(|r| replicas.contains(r))
        .copied()
        .collect();
    if isr.is_empty() {
        return None;
    }
    let kept = state.leader.filter(|l| isr.contains(l));
    let first = |ok: &dyn Fn(NodeId) -> bool| {
        replicas
            .iter()
            .copied()
            .find(|&r| isr.contains(&r) && ok(r))
    };
    let leader = kept
        .or_else(|| first(&|r| brokers.eligible(r)))
        .or_else(|| first(&|r| brokers.epoch(r).is_some()));
    let moved = leader != state.leader;
    let next = PartitionState {
        leader_broker_epoch: match moved {
            true => leader.and_then(|l| brokers.epoch(l)).unwrap_or(-1),
            false => state.leader_broker_epoch,
        },
        leader_epoch: state.leader_epoch + i32::from(moved),
        partition_epoch: state.partition_epoch + 1,
        replicas,
        isr,
        leader,
        adding,
        removing,
    };
    assert!(next.leader.is_none_or(|l| next.isr.contains(&l)));
    assert!(next.adding.iter().all(|r| next.replicas.contains(r)));
    assert!(next.removing.iter().all(|r| next.replicas.contains(r)));
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(replicas: &[NodeId], isr: &[NodeId], leader: NodeId) -> PartitionState {
        PartitionState {
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader: Some(leader),
            leader_epoch: 3,
            leader_broker_epoch: 10,
            partition_epoch: 5,
            adding: vec![],
            removing: vec![],
        }
    }

    fn live(n: NodeId) -> Option<i64> {
        (1..=5).contains(&n).then_some(10)
    }

    #[test]
    fn a_reassignment_adds_first_and_removes_once_the_new_replicas_are_in_sync() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let started = start(&s, &[2, 3, 4], &live).unwrap().unwrap();
        assert_eq!(started.replicas, [2, 3, 4, 1]);
        assert_eq!(
            (started.adding.as_slice(), started.removing.as_slice()),
            (&[4][..], &[1][..])
        );
        assert_eq!(
            (started.leader, started.leader_epoch),
            (Some(1), 3),
            "no new leader yet"
        );
        assert_eq!(complete(&started, &live), None, "4 is not in sync yet");
        let caught_up = PartitionState {
            isr: vec![1, 2, 3, 4],
            ..started.clone()
        };
        let done = complete(&caught_up, &live).unwrap();
        assert_eq!(done.replicas, [2, 3, 4]);
        assert_eq!(done.isr, [2, 3, 4]);
        assert_eq!(
            (done.leader, done.leader_epoch),
            (Some(2), 4),
            "1 hands over"
        );
        assert!(!done.reassigning());
        assert_eq!(start(&done, &[2, 3, 4], &live), Ok(None), "already there");
    }

    #[test]
    fn dropping_or_reordering_replicas_completes_at_once() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let dropped = start(&s, &[1, 2], &live).unwrap().unwrap();
        assert_eq!(
            (dropped.replicas.as_slice(), dropped.isr.as_slice()),
            (&[1, 2][..], &[1, 2][..])
        );
        assert!(!dropped.reassigning());
        let reordered = start(&s, &[3, 1, 2], &live).unwrap().unwrap();
        assert_eq!(
            (reordered.replicas.as_slice(), reordered.leader),
            (&[3, 1, 2][..], Some(1))
        );
    }

    #[test]
    fn a_cancel_restores_the_original_replicas_and_a_new_target_replaces_the_old() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let started = start(&s, &[4, 5, 3], &live).unwrap().unwrap();
        let with_4 = PartitionState {
            isr: vec![1, 2, 3, 4],
            ..started.clone()
        };
        // KRaft's revert: the replicas less the new ones, in the order they are held.
        let back = cancel(&with_4, &live).unwrap();
        assert_eq!(
            (back.replicas.as_slice(), back.isr.as_slice()),
            (&[3, 1, 2][..], &[1, 2, 3][..])
        );
        assert_eq!(back.leader, Some(1));
        assert!(!back.reassigning());
        assert_eq!(cancel(&back, &live), Err(ReassignRefused::NoneInProgress));
        let replaced = start(&with_4, &[1, 2, 5], &live).unwrap().unwrap();
        assert_eq!(
            replaced.replicas,
            [1, 2, 5, 3],
            "the original set, not the old target"
        );
        assert_eq!(
            (replaced.adding.as_slice(), replaced.removing.as_slice()),
            (&[5][..], &[3][..])
        );
        assert_eq!(replaced.isr, [1, 2, 3], "4 left with its reassignment");
    }

    #[test]
    fn bad_targets_are_refused_with_kafkas_reasons() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let refused = |target: &[NodeId]| match start(&s, target, &live) {
            Err(ReassignRefused::Invalid(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(refused(&[]).contains("empty replica list"));
        assert!(refused(&[1, 2, 1]).contains("broker 1 more than once"));
        assert!(refused(&[1, 9]).contains("broker 9, but no such broker is registered"));
    }
}
