//! What the controller decides, as pure functions of the state it read: where a new
//! partition's replicas go (Kafka's default placement), who leads when a leader is gone
//! (the first live ISR member in replica order, never one outside the ISR), and whether a
//! leader's ISR change stands. The caller writes each result with a compare-and-swap on the
//! store's revision it read, and the controller's epoch, so a deposed controller or leader
//! can never win.

use super::{IsrChange, NodeId, PartitionState};

/// Why replicas cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    #[error("replication factor {factor} is larger than the {live} live brokers (INVALID_REPLICATION_FACTOR)")]
    TooFewBrokers { factor: usize, live: usize },
    #[error("replication factor must be at least 1")]
    ZeroFactor,
}

/// Kafka's placement without racks (AdminUtils.assignReplicasToBrokers): partition `p`'s
/// first replica is broker `(p + start) % n`, the others follow it at a shift that grows
/// once per round of `n` partitions, so leaders and followers spread evenly. `brokers`
/// sorted; `start` and `shift` are random in Kafka (the caller's seed here).
pub fn place(
    partitions: usize,
    factor: usize,
    brokers: &[NodeId],
    start: usize,
    shift: usize,
) -> Result<Vec<Vec<NodeId>>, PlacementError> {
    let n = brokers.len();
    if factor == 0 {
        return Err(PlacementError::ZeroFactor);
    }
    if factor > n {
        return Err(PlacementError::TooFewBrokers { factor, live: n });
    }
    let mut shift = shift;
    let mut out = Vec::with_capacity(partitions);
    for p in 0..partitions {
        if p > 0 && p % n == 0 {
            shift += 1;
        }
        let first = (p + start) % n;
        let mut replicas = vec![brokers[first]];
        for j in 0..factor - 1 {
            // Kafka's replicaIndex: never the first broker again.
            let step = 1 + (shift + j) % (n - 1);
            replicas.push(brokers[(first + step) % n]);
        }
        assert_eq!(replicas.len(), factor);
        out.push(replicas);
    }
    Ok(out)
}

/// The new state when the leader is gone (dead, or registered again since it was elected)
/// or an ISR member is dead; None when nothing needs to change. `live(node)` is the broker
/// epoch of a live node's registration. Dead members leave the ISR unless none would be
/// left: then the last one stays, and the partition stays offline until it returns (clean
/// election only).
pub fn elect(
    state: &PartitionState,
    live: impl Fn(NodeId) -> Option<i64>,
) -> Option<PartitionState> {
    let leader_ok = state
        .leader
        .is_some_and(|l| live(l) == Some(state.leader_broker_epoch));
    let alive: Vec<NodeId> = state
        .isr
        .iter()
        .copied()
        .filter(|&r| live(r).is_some())
        .collect();
    let isr = if alive.is_empty() {
        state.isr.clone()
    } else {
        alive
    };
    if leader_ok && isr == state.isr {
        return None;
    }
    let leader = match leader_ok {
        true => state.leader,
        false => state
            .replicas
            .iter()
            .copied()
            .find(|r| isr.contains(r) && live(*r).is_some()),
    };
    if leader.is_none() && state.leader.is_none() && isr == state.isr {
        return None;
    }
    let new_leader = !leader_ok;
    let next = PartitionState {
        replicas: state.replicas.clone(),
        isr,
        leader,
        leader_epoch: state.leader_epoch + i32::from(new_leader),
        leader_broker_epoch: leader.and_then(&live).unwrap_or(-1),
        partition_epoch: state.partition_epoch + 1,
    };
    assert!(
        next.leader.is_none_or(|l| next.isr.contains(&l)),
        "a leader outside the ISR"
    );
    Some(next)
}

/// Why an ISR change is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IsrRefused {
    #[error(
        "the change was made against an older state (FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION)"
    )]
    Stale,
    #[error("the new ISR names a broker that is not a live replica (INELIGIBLE_REPLICA)")]
    Ineligible,
}

/// A leader's ISR change against the current state (KIP-497's AlterPartition checks): it
/// stands only if made by the current leader on the current partition epoch, keeps the
/// leader, and adds only live replicas.
pub fn alter_isr(
    state: &PartitionState,
    change: &IsrChange,
    live: impl Fn(NodeId) -> Option<i64>,
) -> Result<PartitionState, IsrRefused> {
    let current = state.leader == Some(change.leader)
        && state.leader_epoch == change.leader_epoch
        && state.partition_epoch == change.partition_epoch;
    if !current {
        return Err(IsrRefused::Stale);
    }
    let eligible =
        |r: &NodeId| state.replicas.contains(r) && (state.isr.contains(r) || live(*r).is_some());
    if !change.isr.contains(&change.leader) || !change.isr.iter().all(eligible) {
        return Err(IsrRefused::Ineligible);
    }
    Ok(PartitionState {
        isr: change.isr.clone(),
        partition_epoch: state.partition_epoch + 1,
        ..state.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(isr: &[NodeId], leader: Option<NodeId>) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            leader,
            leader_epoch: 4,
            leader_broker_epoch: 10,
            partition_epoch: 7,
        }
    }

    #[test]
    fn placement_spreads_leaders_and_never_repeats_a_broker() {
        let placed = place(6, 3, &[1, 2, 3], 0, 0).unwrap();
        let leaders: Vec<NodeId> = placed.iter().map(|r| r[0]).collect();
        assert_eq!(leaders, [1, 2, 3, 1, 2, 3]);
        for r in &placed {
            let mut sorted = r.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), 3, "{r:?}");
        }
        assert_eq!(placed[0], [1, 2, 3]);
        assert_eq!(placed[3], [1, 3, 2], "the shift grows after a round");
        let refused = place(1, 4, &[1, 2, 3], 0, 0).unwrap_err();
        assert_eq!(
            refused,
            PlacementError::TooFewBrokers { factor: 4, live: 3 }
        );
    }

    #[test]
    fn a_dead_leader_is_replaced_by_the_first_live_isr_member_in_replica_order() {
        let live = |n: NodeId| (n != 1).then_some(10);
        let next = elect(&state(&[1, 3, 2], Some(1)), live).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.partition_epoch),
            (Some(2), 5, 8)
        );
        assert_eq!(next.isr, [3, 2]);
        assert_eq!(elect(&next, live), None, "settled");
    }

    #[test]
    fn no_replica_outside_the_isr_is_elected_and_the_last_isr_member_is_kept() {
        let only_3 = |n: NodeId| (n == 3).then_some(10);
        let next = elect(&state(&[1], Some(1)), only_3).unwrap();
        assert_eq!((next.leader, next.isr.as_slice()), (None, &[1][..]));
        assert_eq!(elect(&next, only_3), None, "offline until 1 returns");
        let back = elect(&next, |_| Some(11)).unwrap();
        assert_eq!((back.leader, back.leader_broker_epoch), (Some(1), 11));
    }

    #[test]
    fn a_restarted_leader_is_elected_again_with_a_new_epoch() {
        let next = elect(&state(&[1, 2, 3], Some(1)), |_| Some(12)).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.leader_broker_epoch),
            (Some(1), 5, 12)
        );
    }

    #[test]
    fn an_isr_change_stands_only_on_the_state_it_was_made_against() {
        let s = state(&[1, 2], Some(1));
        let change = IsrChange {
            leader: 1,
            leader_epoch: 4,
            partition_epoch: 7,
            isr: vec![1, 2, 3],
        };
        let next = alter_isr(&s, &change, |_| Some(10)).unwrap();
        assert_eq!(
            (next.isr.as_slice(), next.partition_epoch),
            (&[1, 2, 3][..], 8)
        );
        assert_eq!(
            alter_isr(&next, &change, |_| Some(10)),
            Err(IsrRefused::Stale)
        );
        assert_eq!(
            alter_isr(&s, &change, |n| (n != 3).then_some(10)),
            Err(IsrRefused::Ineligible)
        );
        let without_leader = IsrChange {
            isr: vec![2],
            ..change
        };
        assert_eq!(
            alter_isr(&s, &without_leader, |_| Some(10)),
            Err(IsrRefused::Ineligible)
        );
    }
}
