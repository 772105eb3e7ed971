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
    check_factor(factor, n)?;
    let mut out = Vec::with_capacity(partitions);
    for (first, shift) in firsts(partitions, n, start, shift) {
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

/// A replication factor the `n` live brokers can hold.
fn check_factor(factor: usize, n: usize) -> Result<(), PlacementError> {
    match factor {
        0 => Err(PlacementError::ZeroFactor),
        f if f > n => Err(PlacementError::TooFewBrokers { factor, live: n }),
        _ => Ok(()),
    }
}

/// Each partition's first replica (an index into the broker list) and the shift of its
/// other replicas: Kafka's, which grows by one after every round of `n` partitions.
fn firsts(
    partitions: usize,
    n: usize,
    start: usize,
    shift: usize,
) -> impl Iterator<Item = (usize, usize)> {
    let shift = within_a_round(shift, n);
    (0..partitions).map(move |p| ((p + start) % n, shift + p / n))
}

/// A random shift reduced to the steps it can make among `n` brokers (every step is taken
/// modulo n - 1), so shifting further never overflows.
fn within_a_round(shift: usize, n: usize) -> usize {
    match n > 1 {
        true => shift % (n - 1),
        false => 0,
    }
}

/// Kafka's rack-aware placement (AdminUtils.assignReplicasToBrokersRackAware): over the
/// brokers listed rack by rack in turn (one of each rack, then the next of each), the
/// first replica as without racks, each next one the next broker at the shift that is on
/// a rack without a replica yet (while there is one) and not holding one already. A
/// broker without a rack is on the rack "" here. `brokers` as (id, rack), sorted by id.
/// Without any rack it is `place` exactly.
pub fn place_on_racks(
    partitions: usize,
    factor: usize,
    brokers: &[(NodeId, Option<String>)],
    start: usize,
    shift: usize,
) -> Result<Vec<Vec<NodeId>>, PlacementError> {
    if brokers.iter().all(|(_, rack)| rack.is_none()) {
        let ids: Vec<NodeId> = brokers.iter().map(|(id, _)| *id).collect();
        return place(partitions, factor, &ids, start, shift);
    }
    let n = brokers.len();
    check_factor(factor, n)?;
    let arranged = rack_alternated(brokers);
    let racks = arranged
        .iter()
        .map(|(_, r)| r)
        .collect::<std::collections::BTreeSet<_>>();
    let mut out = Vec::with_capacity(partitions);
    for (first, shift) in firsts(partitions, n, start, shift) {
        let mut replicas = vec![arranged[first].0];
        let mut used_racks = vec![&arranged[first].1];
        let mut k = 0;
        while replicas.len() < factor {
            let step = 1 + (shift * racks.len() + k) % (n - 1);
            let (broker, rack) = &arranged[(first + step) % n];
            let rack_ok = !used_racks.contains(&rack) || used_racks.len() == racks.len();
            let broker_ok = !replicas.contains(broker);
            if rack_ok && broker_ok {
                replicas.push(*broker);
                used_racks.push(rack);
            }
            k += 1;
            assert!(k <= 2 * n * n, "a replica is found within two rounds");
        }
        out.push(replicas);
    }
    Ok(out)
}

/// The brokers one per rack in turn (racks in name order, each rack's brokers by id).
fn rack_alternated(brokers: &[(NodeId, Option<String>)]) -> Vec<(NodeId, String)> {
    let mut by_rack: std::collections::BTreeMap<String, Vec<NodeId>> = Default::default();
    for (id, rack) in brokers {
        by_rack
            .entry(rack.clone().unwrap_or_default())
            .or_default()
            .push(*id);
    }
    let deepest = by_rack.values().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(brokers.len());
    for i in 0..deepest {
        for (rack, ids) in &by_rack {
            if let Some(id) = ids.get(i) {
                out.push((*id, rack.clone()));
            }
        }
    }
    assert_eq!(out.len(), brokers.len(), "every broker listed once");
    out
}

/// What the controller knows of the brokers when it decides: each live node's broker
/// epoch, and which live nodes are leaving (a controlled shutdown: they lead nothing new
/// and leave the ISRs). A closure of the epoch alone is a cluster where nobody is leaving.
pub trait Liveness {
    /// The broker epoch of a live node's registration (None: dead).
    fn epoch(&self, node: NodeId) -> Option<i64>;

    /// Whether a live node asked to stop (Kafka's controlled shutdown).
    fn leaving(&self, _node: NodeId) -> bool {
        false
    }

    /// Live and staying: may lead, and may join an ISR.
    fn eligible(&self, node: NodeId) -> bool {
        self.epoch(node).is_some() && !self.leaving(node)
    }
}

impl<F: Fn(NodeId) -> Option<i64>> Liveness for F {
    fn epoch(&self, node: NodeId) -> Option<i64> {
        self(node)
    }
}

/// The new state when the leader is gone (dead, or registered again since it was elected)
/// or leaving, or an ISR member is dead or leaving; None when nothing needs to change.
/// Dead and leaving members leave the ISR unless no staying member would be left: then
/// the live ones stay (a leaving leader keeps leading: it cannot hand off), or, with none
/// live, the last ones stay and the partition stays offline until one returns (clean
/// election only).
pub fn elect(state: &PartitionState, brokers: &impl Liveness) -> Option<PartitionState> {
    let isr = surviving_isr(state, brokers);
    let leader_ok = live_leader(state, brokers).is_some_and(|l| isr.contains(&l));
    if leader_ok && isr == state.isr {
        return None;
    }
    let leader = match leader_ok {
        true => state.leader,
        false => first_in_order(state, &isr, |r| brokers.eligible(r))
            .or_else(|| first_in_order(state, &isr, |r| brokers.epoch(r).is_some())),
    };
    if leader.is_none() && state.leader.is_none() && isr == state.isr {
        return None;
    }
    let next = PartitionState {
        replicas: state.replicas.clone(),
        isr,
        leader,
        leader_epoch: state.leader_epoch + i32::from(!leader_ok),
        leader_broker_epoch: leader.and_then(|l| brokers.epoch(l)).unwrap_or(-1),
        partition_epoch: state.partition_epoch + 1,
        adding: state.adding.clone(),
        removing: state.removing.clone(),
    };
    assert!(
        next.leader.is_none_or(|l| next.isr.contains(&l)),
        "a leader outside the ISR"
    );
    Some(next)
}

/// The named leader, if it is live in the registration it was elected in (a restarted
/// leader is not the leader until elected again).
fn live_leader(state: &PartitionState, brokers: &impl Liveness) -> Option<NodeId> {
    let leader = state.leader?;
    (brokers.epoch(leader) == Some(state.leader_broker_epoch)).then_some(leader)
}

/// The ISR without its dead and leaving members: the staying ones if any, else the live
/// ones, else the ISR as it was (its last members wait to return).
fn surviving_isr(state: &PartitionState, brokers: &impl Liveness) -> Vec<NodeId> {
    let keep = |pick: &dyn Fn(NodeId) -> bool| -> Vec<NodeId> {
        state.isr.iter().copied().filter(|&r| pick(r)).collect()
    };
    let staying = keep(&|r| brokers.eligible(r));
    if !staying.is_empty() {
        return staying;
    }
    let alive = keep(&|r| brokers.epoch(r).is_some());
    if !alive.is_empty() {
        return alive;
    }
    state.isr.clone()
}

/// The first replica, in assignment order, of `isr` that `ok` accepts.
fn first_in_order(
    state: &PartitionState,
    isr: &[NodeId],
    ok: impl Fn(NodeId) -> bool,
) -> Option<NodeId> {
    (state.replicas.iter().copied()).find(|&r| isr.contains(&r) && ok(r))
}

/// Why an election asked for (Kafka's ElectLeaders) changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElectionRefused {
    #[error("the partition already has the leader asked for (ELECTION_NOT_NEEDED)")]
    NotNeeded,
    #[error("the preferred replica is not live and in sync (PREFERRED_LEADER_NOT_AVAILABLE)")]
    PreferredNotAvailable,
    #[error("no live replica can lead the partition (ELIGIBLE_LEADERS_NOT_AVAILABLE)")]
    NoEligibleLeader,
}

/// Kafka's PREFERRED election: the first assigned replica leads if it is live, staying
/// and in sync, with the next leader epoch.
pub fn elect_preferred(
    state: &PartitionState,
    brokers: &impl Liveness,
) -> Result<PartitionState, ElectionRefused> {
    let preferred = state.replicas[0];
    if live_leader(state, brokers) == Some(preferred) {
        return Err(ElectionRefused::NotNeeded);
    }
    if !state.isr.contains(&preferred) || !brokers.eligible(preferred) {
        return Err(ElectionRefused::PreferredNotAvailable);
    }
    Ok(led_by(state, preferred, state.isr.clone(), brokers))
}

/// Kafka's UNCLEAN election, only ever when asked: a partition without a live leader is
/// led by its first live replica in assignment order, in sync or not, which becomes the
/// whole ISR. What only the lost replicas held is gone (the others truncate to it).
pub fn elect_unclean(
    state: &PartitionState,
    brokers: &impl Liveness,
) -> Result<PartitionState, ElectionRefused> {
    if live_leader(state, brokers).is_some() {
        return Err(ElectionRefused::NotNeeded);
    }
    let in_order = state.replicas.iter().copied();
    let staying = in_order.clone().find(|&r| brokers.eligible(r));
    let chosen = staying.or_else(|| in_order.clone().find(|&r| brokers.epoch(r).is_some()));
    let leader = chosen.ok_or(ElectionRefused::NoEligibleLeader)?;
    Ok(led_by(state, leader, vec![leader], brokers))
}

/// `state` with `leader` elected over `isr`: a new leader epoch and partition epoch.
fn led_by(
    state: &PartitionState,
    leader: NodeId,
    isr: Vec<NodeId>,
    brokers: &impl Liveness,
) -> PartitionState {
    assert!(isr.contains(&leader), "a leader is elected into its ISR");
    let epoch = brokers.epoch(leader);
    assert!(epoch.is_some(), "only a live replica is elected");
    PartitionState {
        replicas: state.replicas.clone(),
        isr,
        leader: Some(leader),
        leader_epoch: state.leader_epoch + 1,
        leader_broker_epoch: epoch.unwrap_or(-1),
        partition_epoch: state.partition_epoch + 1,
        adding: state.adding.clone(),
        removing: state.removing.clone(),
    }
}

/// Kafka's leader imbalance check (`auto.leader.rebalance.enable`): for each broker, the
/// share of the partitions it is preferred for that another broker leads; where that
/// share is above `percentage`, the preferred elections that would now move those
/// partitions back to it, as (index into `states`, next state).
pub fn imbalanced(
    states: &[&PartitionState],
    percentage: u32,
    brokers: &impl Liveness,
) -> Vec<(usize, PartitionState)> {
    let mut by_preferred: std::collections::BTreeMap<NodeId, (usize, Vec<usize>)> =
        Default::default();
    for (i, state) in states.iter().enumerate() {
        let entry = by_preferred.entry(state.replicas[0]).or_default();
        entry.0 += 1;
        if state.leader != Some(state.replicas[0]) {
            entry.1.push(i);
        }
    }
    let over =
        |(total, moved): &(usize, Vec<usize>)| moved.len() * 100 > total * percentage as usize;
    let election = |&i: &usize| Some((i, elect_preferred(states[i], brokers).ok()?));
    let picked = by_preferred.values().filter(|e| over(e));
    picked
        .flat_map(|(_, moved)| moved.iter().filter_map(election))
        .collect()
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
/// leader, and adds only live replicas that are not leaving.
pub fn alter_isr(
    state: &PartitionState,
    change: &IsrChange,
    brokers: &impl Liveness,
) -> Result<PartitionState, IsrRefused> {
    let current = state.leader == Some(change.leader)
        && state.leader_epoch == change.leader_epoch
        && state.partition_epoch == change.partition_epoch;
    if !current {
        return Err(IsrRefused::Stale);
    }
    // A member may stay; a new one must be live and staying (not in controlled shutdown).
    let eligible =
        |r: &NodeId| state.replicas.contains(r) && (state.isr.contains(r) || brokers.eligible(*r));
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
            adding: vec![],
            removing: vec![],
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
        let huge = place(7, 3, &[1, 2, 3], 0, usize::MAX).unwrap();
        let same = place(7, 3, &[1, 2, 3], 0, usize::MAX % 2).unwrap();
        assert_eq!(huge, same, "a random shift of any size, no overflow");
        let refused = place(1, 4, &[1, 2, 3], 0, 0).unwrap_err();
        assert_eq!(
            refused,
            PlacementError::TooFewBrokers { factor: 4, live: 3 }
        );
    }

    #[test]
    fn racks_get_one_replica_each_while_there_are_racks_left() {
        let rack = |r: &str| Some(r.to_string());
        let brokers = [
            (1, rack("a")),
            (2, rack("a")),
            (3, rack("b")),
            (4, rack("b")),
            (5, rack("c")),
            (6, rack("c")),
        ];
        assert_eq!(
            rack_alternated(&brokers)
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>(),
            [1, 3, 5, 2, 4, 6]
        );
        let rack_of = |id: NodeId| brokers.iter().find(|b| b.0 == id).unwrap().1.clone();
        for (start, shift) in [(0, 0), (2, 1), (5, 3), (1, usize::MAX)] {
            let placed = place_on_racks(12, 3, &brokers, start, shift).unwrap();
            for r in &placed {
                let mut racks: Vec<_> = r.iter().map(|&id| rack_of(id)).collect();
                racks.sort();
                racks.dedup();
                assert_eq!(racks.len(), 3, "{r:?} over three racks");
            }
            let mut leaders: Vec<NodeId> = placed.iter().map(|r| r[0]).collect();
            leaders.sort_unstable();
            assert_eq!(
                leaders,
                [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6],
                "leaders spread"
            );
        }
        // More replicas than racks: every rack first, then a second broker on one.
        let two_racks = &brokers[..4];
        for r in place_on_racks(4, 3, two_racks, 0, 0).unwrap() {
            let racks: std::collections::BTreeSet<_> = r.iter().map(|&id| rack_of(id)).collect();
            assert_eq!(racks.len(), 2, "{r:?}");
        }
        let none: Vec<(NodeId, Option<String>)> = (1..=3).map(|id| (id, None)).collect();
        assert_eq!(
            place_on_racks(6, 3, &none, 1, 2).unwrap(),
            place(6, 3, &[1, 2, 3], 1, 2).unwrap(),
            "without racks: Kafka's placement without racks"
        );
    }

    #[test]
    fn a_dead_leader_is_replaced_by_the_first_live_isr_member_in_replica_order() {
        let live = |n: NodeId| (n != 1).then_some(10);
        let next = elect(&state(&[1, 3, 2], Some(1)), &live).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.partition_epoch),
            (Some(2), 5, 8)
        );
        assert_eq!(next.isr, [3, 2]);
        assert_eq!(elect(&next, &live), None, "settled");
    }

    #[test]
    fn no_replica_outside_the_isr_is_elected_and_the_last_isr_member_is_kept() {
        let only_3 = |n: NodeId| (n == 3).then_some(10);
        let next = elect(&state(&[1], Some(1)), &only_3).unwrap();
        assert_eq!((next.leader, next.isr.as_slice()), (None, &[1][..]));
        assert_eq!(elect(&next, &only_3), None, "offline until 1 returns");
        let back = elect(&next, &|_: NodeId| Some(11)).unwrap();
        assert_eq!((back.leader, back.leader_broker_epoch), (Some(1), 11));
    }

    #[test]
    fn a_restarted_leader_is_elected_again_with_a_new_epoch() {
        let next = elect(&state(&[1, 2, 3], Some(1)), &|_: NodeId| Some(12)).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.leader_broker_epoch),
            (Some(1), 5, 12)
        );
    }

    /// Leader 1's change of `state(&[1, 2], Some(1))` that adds replica 3.
    fn adding_3() -> IsrChange {
        IsrChange {
            leader: 1,
            leader_epoch: 4,
            partition_epoch: 7,
            isr: vec![1, 2, 3],
        }
    }

    #[test]
    fn an_isr_change_stands_only_on_the_state_it_was_made_against() {
        let s = state(&[1, 2], Some(1));
        let change = adding_3();
        let next = alter_isr(&s, &change, &|_: NodeId| Some(10)).unwrap();
        assert_eq!(
            (next.isr.as_slice(), next.partition_epoch),
            (&[1, 2, 3][..], 8)
        );
        assert_eq!(
            alter_isr(&next, &change, &|_: NodeId| Some(10)),
            Err(IsrRefused::Stale)
        );
        assert_eq!(
            alter_isr(&s, &change, &|n: NodeId| (n != 3).then_some(10)),
            Err(IsrRefused::Ineligible)
        );
        let without_leader = IsrChange {
            isr: vec![2],
            ..change
        };
        assert_eq!(
            alter_isr(&s, &without_leader, &|_: NodeId| Some(10)),
            Err(IsrRefused::Ineligible)
        );
    }

    /// Every node live at epoch 10; `leaving` in controlled shutdown.
    struct Leaving(&'static [NodeId]);

    impl Liveness for Leaving {
        fn epoch(&self, _: NodeId) -> Option<i64> {
            Some(10)
        }
        fn leaving(&self, node: NodeId) -> bool {
            self.0.contains(&node)
        }
    }

    #[test]
    fn a_leaving_leader_hands_off_to_a_staying_isr_member_and_leaves_the_isr() {
        let next = elect(&state(&[1, 2, 3], Some(1)), &Leaving(&[1])).unwrap();
        assert_eq!((next.leader, next.leader_epoch), (Some(2), 5));
        assert_eq!(next.isr, [2, 3]);
        assert_eq!(elect(&next, &Leaving(&[1])), None, "settled");
        let follower = elect(&state(&[1, 2, 3], Some(1)), &Leaving(&[3])).unwrap();
        assert_eq!((follower.leader, follower.leader_epoch), (Some(1), 4));
        assert_eq!(follower.isr, [1, 2], "a leaving follower leaves the ISR");
    }

    #[test]
    fn the_last_in_sync_replica_keeps_leading_while_it_leaves() {
        assert_eq!(elect(&state(&[1], Some(1)), &Leaving(&[1])), None);
        let both = elect(&state(&[1, 2], Some(1)), &Leaving(&[1, 2]));
        assert_eq!(both, None, "no staying member: nobody to hand off to");
    }

    #[test]
    fn a_leaving_replica_does_not_join_an_isr() {
        let s = state(&[1, 2], Some(1));
        let change = adding_3();
        let refused = alter_isr(&s, &change, &Leaving(&[3]));
        assert_eq!(refused, Err(IsrRefused::Ineligible));
        let shrink = IsrChange {
            isr: vec![1],
            ..change
        };
        assert!(alter_isr(&s, &shrink, &Leaving(&[2])).is_ok());
    }

    #[test]
    fn a_preferred_election_moves_leadership_to_the_first_replica_only_when_it_is_in_sync() {
        let next = elect_preferred(&state(&[2, 1, 3], Some(2)), &Leaving(&[])).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.partition_epoch),
            (Some(1), 5, 8)
        );
        assert_eq!(next.isr, [2, 1, 3], "the ISR is kept");
        let refused = |isr: &[NodeId], leaving: &'static [NodeId]| {
            elect_preferred(&state(isr, Some(2)), &Leaving(leaving)).unwrap_err()
        };
        assert_eq!(
            refused(&[2, 3], &[]),
            ElectionRefused::PreferredNotAvailable
        );
        assert_eq!(
            refused(&[2, 1], &[1]),
            ElectionRefused::PreferredNotAvailable
        );
        let dead_1 = |n: NodeId| (n != 1).then_some(10);
        let dead = elect_preferred(&state(&[2, 1], Some(2)), &dead_1).unwrap_err();
        assert_eq!(dead, ElectionRefused::PreferredNotAvailable);
        let already = elect_preferred(&next, &Leaving(&[])).unwrap_err();
        assert_eq!(already, ElectionRefused::NotNeeded);
    }

    #[test]
    fn an_unclean_election_only_helps_a_partition_without_a_live_leader() {
        let only_3 = |n: NodeId| (n == 3).then_some(10);
        let offline = elect(&state(&[1], Some(1)), &only_3).unwrap();
        let next = elect_unclean(&offline, &only_3).unwrap();
        assert_eq!((next.leader, next.isr.as_slice()), (Some(3), &[3][..]));
        assert_eq!(next.leader_epoch, offline.leader_epoch + 1);
        let refused = elect_unclean(&next, &only_3).unwrap_err();
        assert_eq!(refused, ElectionRefused::NotNeeded);
        let nobody = elect_unclean(&offline, &|_: NodeId| None).unwrap_err();
        assert_eq!(nobody, ElectionRefused::NoEligibleLeader);
    }

    #[test]
    fn only_brokers_over_the_imbalance_percentage_get_their_leaderships_back() {
        let led = |leader: NodeId, replicas: [NodeId; 3]| PartitionState {
            replicas: replicas.to_vec(),
            isr: replicas.to_vec(),
            leader: Some(leader),
            ..state(&[], None)
        };
        // Broker 1 is preferred for four partitions and leads one; broker 2 leads its two.
        let states = [
            led(1, [1, 2, 3]),
            led(2, [1, 2, 3]),
            led(3, [1, 3, 2]),
            led(2, [1, 2, 3]),
            led(2, [2, 3, 1]),
            led(2, [2, 1, 3]),
        ];
        let refs: Vec<&PartitionState> = states.iter().collect();
        let moved = |percentage, leaving| {
            let elections = imbalanced(&refs, percentage, &Leaving(leaving));
            let each = elections.into_iter().map(|(i, next)| (i, next.leader));
            each.collect::<Vec<_>>()
        };
        assert_eq!(moved(10, &[]), [(1, Some(1)), (2, Some(1)), (3, Some(1))]);
        assert_eq!(moved(75, &[]), []);
        assert_eq!(moved(10, &[1]), [], "a leaving broker gets nothing back");
    }
}
