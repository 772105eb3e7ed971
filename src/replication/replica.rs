//! One replica of a partition as Kafka runs it: as leader it stamps its epoch on appends,
//! tracks each follower's log end from the offsets it fetches, advances the high watermark
//! to the smallest log end in the ISR, and proposes ISR changes (which count only once the
//! store holds them); as follower it fetches with its last epoch and truncates where the
//! leader says the logs stop agreeing (KIP-320), never to the high watermark alone.

use std::collections::BTreeMap;

use super::{Epoch, UNDEFINED};
use super::{EpochCache, EpochEntry, Millis, NodeId, Offset, PartitionState, ReplicaError};

/// What a follower asks of its leader (Kafka's Fetch from a replica).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchRequest {
    pub follower: NodeId,
    pub fetch_offset: Offset,
    /// The epoch of the last record the follower holds; None for an empty log.
    pub last_fetched_epoch: Option<Epoch>,
    pub current_leader_epoch: Epoch,
    /// The follower's number for this fetch (a correlation id): only the answer to its
    /// latest fetch is taken, so a late or repeated answer never acts twice.
    pub correlation: u64,
}

/// The leader's answer to a fetch it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchAnswer {
    /// Send the records from `from` on, and the high watermark.
    Records {
        from: Offset,
        high_watermark: Offset,
    },
    /// The follower's log stops agreeing with the leader's at `end_offset` (the end of
    /// `epoch` in the leader's log): it truncates there and fetches again.
    Diverging { epoch: Epoch, end_offset: Offset },
}

/// A leader's proposal of a new ISR, fenced by the epochs of the state it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub leader: NodeId,
    pub leader_epoch: Epoch,
    pub partition_epoch: i32,
    pub isr: Vec<NodeId>,
}

/// The records of one fetch answer a follower received, as the leader sent them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The fetch this answers (`FetchRequest::correlation`).
    pub correlation: u64,
    pub leader_epoch: Epoch,
    pub fetch_offset: Offset,
    pub high_watermark: Offset,
    /// The follower's log end once the records are appended.
    pub new_end: Offset,
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// Not acting: just started, or named leader under an earlier registration.
    Unattached,
    Leader(Leadership),
    Follower {
        leader: Option<NodeId>,
        epoch: Epoch,
    },
}

/// What a leader knows of its epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    pub epoch: Epoch,
    pub partition_epoch: i32,
    /// The ISR the store holds (the only one the high watermark may shrink to).
    pub isr: Vec<NodeId>,
    /// An ISR sent to the store and not yet seen back: the high watermark waits for the
    /// members of both.
    pending: Option<Vec<NodeId>>,
    /// Members of proposals given up on (refused for good): a copy of such a proposal may
    /// still land in the store (a retry checked against a stale view, a write that timed
    /// out), so the high watermark waits for them too until a newer state is applied.
    abandoned: Vec<NodeId>,
    /// The offset of the first record of this epoch.
    epoch_start: Offset,
    followers: BTreeMap<NodeId, Progress>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Progress {
    /// The follower's log end as its last fetch showed it (UNDEFINED before one).
    log_end: Offset,
    caught_up_at: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    me: NodeId,
    epochs: EpochCache,
    high_watermark: Offset,
    /// The (leader epoch, partition epoch) of the newest state applied: older ones are stale.
    seen: (Epoch, i32),
    role: Role,
    /// The correlation of the latest fetch sent.
    last_fetch: u64,
}

impl Replica {
    /// A replica as its files left it (the epoch history, the checkpointed high watermark).
    pub fn new(me: NodeId, epochs: EpochCache, high_watermark: Offset) -> Replica {
        Replica {
            me,
            epochs,
            high_watermark,
            seen: (UNDEFINED as Epoch, UNDEFINED as i32),
            role: Role::Unattached,
            last_fetch: 0,
        }
    }

    pub fn role(&self) -> &Role {
        &self.role
    }

    pub fn high_watermark(&self) -> Offset {
        self.high_watermark
    }

    pub fn epochs(&self) -> &EpochCache {
        &self.epochs
    }

    /// The ISR while leading.
    pub fn leader_isr(&self) -> Option<&[NodeId]> {
        match &self.role {
            Role::Leader(l) => Some(&l.isr),
            _ => None,
        }
    }

    /// Takes in the partition's state as the store holds it; `broker_epoch` is this node's
    /// registration. An older state than one already applied changes nothing.
    pub fn apply(
        &mut self,
        state: &PartitionState,
        broker_epoch: i64,
        log_end: Offset,
        now: Millis,
    ) {
        let version = (state.leader_epoch, state.partition_epoch);
        if version <= self.seen {
            return;
        }
        let leads = state.leader == Some(self.me) && state.leader_broker_epoch == broker_epoch;
        let same_epoch = version.0 == self.seen.0;
        self.seen = version;
        match &mut self.role {
            Role::Leader(l) if leads && same_epoch => {
                l.partition_epoch = state.partition_epoch;
                l.isr = state.isr.clone();
                l.pending = None;
                // A newer state: no older proposal can land any more (each is a swap on
                // the state it was made against).
                l.abandoned.clear();
                l.follow_replicas(self.me, &state.replicas, now);
                self.advance_high_watermark(log_end);
            }
            _ if leads => self.lead(state, log_end, now),
            _ if state.leader == Some(self.me) => self.role = Role::Unattached,
            _ => {
                let (leader, epoch) = (state.leader, state.leader_epoch);
                self.role = Role::Follower { leader, epoch };
            }
        }
    }

    fn lead(&mut self, state: &PartitionState, log_end: Offset, now: Millis) {
        self.epochs.assign(state.leader_epoch, log_end);
        let mut leadership = Leadership {
            epoch: state.leader_epoch,
            partition_epoch: state.partition_epoch,
            isr: state.isr.clone(),
            pending: None,
            abandoned: Vec::new(),
            epoch_start: log_end,
            followers: BTreeMap::new(),
        };
        leadership.follow_replicas(self.me, &state.replicas, now);
        self.role = Role::Leader(leadership);
        assert!(
            state.isr.contains(&self.me),
            "a leader is elected from the ISR"
        );
    }

    /// This node is no longer a replica in `state` (a reassignment moved the partition
    /// away): unless the state is older than one applied, it neither leads nor fetches
    /// until a newer state names it again, and its copy is emptied with it (no epoch, a
    /// high watermark of 0). Whether it stopped: a late state never empties a replica the
    /// newer one counts on.
    pub fn stop(&mut self, state: &PartitionState) -> bool {
        let version = (state.leader_epoch, state.partition_epoch);
        if version <= self.seen || state.replicas.contains(&self.me) {
            return false;
        }
        self.seen = version;
        self.role = Role::Unattached;
        self.epochs = EpochCache::default();
        self.high_watermark = 0;
        true
    }

    /// As follower: the leader's log starts past this log's end (retention removed what
    /// this replica lacks, or it is new), so the log is emptied to start at `log_start`
    /// (Kafka's truncateFullyAndStartAt). Whether to do so (a stale answer changes nothing).
    pub fn start_at(
        &mut self,
        answered: &FetchRequest,
        log_start: Offset,
        log_end: Offset,
    ) -> bool {
        let current = self.answers_latest(answered.correlation, answered.current_leader_epoch);
        if !current || answered.fetch_offset != log_end || log_start <= log_end {
            return false;
        }
        self.epochs = EpochCache::default();
        self.high_watermark = log_start;
        true
    }

    /// Before an append: the epoch to stamp on it, or why it is refused.
    pub fn append(&self, min_insync: usize) -> Result<Epoch, ReplicaError> {
        let Role::Leader(l) = &self.role else {
            return Err(ReplicaError::NotLeader);
        };
        if l.isr.len() < min_insync {
            return Err(ReplicaError::NotEnoughReplicas);
        }
        Ok(l.epoch)
    }

    /// After an append (or anything that moved the leader's log end).
    pub fn appended(&mut self, log_end: Offset) {
        self.advance_high_watermark(log_end);
    }

    /// A follower's fetch, as leader: the answer, and an ISR expansion to propose when it
    /// has caught up and is `eligible` (registered and not shutting down, KIP-841).
    pub fn on_fetch(
        &mut self,
        request: FetchRequest,
        log_end: Offset,
        now: Millis,
        eligible: impl Fn(NodeId) -> bool,
    ) -> Result<(FetchAnswer, Option<IsrChange>), ReplicaError> {
        let Role::Leader(l) = &self.role else {
            return Err(ReplicaError::NotLeader);
        };
        check_epoch(request.current_leader_epoch, l.epoch)?;
        if !l.followers.contains_key(&request.follower) {
            return Err(ReplicaError::NotLeader);
        }
        if let Some(diverging) = self.divergence(&request, log_end) {
            return Ok((diverging, None));
        }
        if request.fetch_offset > log_end {
            return Err(ReplicaError::OffsetOutOfRange);
        }
        self.record_progress(&request, log_end, now);
        self.advance_high_watermark(log_end);
        let high_watermark = self.high_watermark;
        let answer = FetchAnswer::Records {
            from: request.fetch_offset,
            high_watermark,
        };
        let expansion = eligible(request.follower).then(|| self.expansion(request.follower));
        Ok((answer, expansion.flatten()))
    }

    /// KIP-320: the follower's last epoch must end in the leader's log at or past the
    /// follower's log end, else the logs disagree from where it ends.
    fn divergence(&self, request: &FetchRequest, log_end: Offset) -> Option<FetchAnswer> {
        let last = request.last_fetched_epoch?;
        let (epoch, end_offset) = self.epochs.end_offset_for(last, log_end);
        (epoch < last || end_offset < request.fetch_offset)
            .then_some(FetchAnswer::Diverging { epoch, end_offset })
    }

    fn record_progress(&mut self, request: &FetchRequest, log_end: Offset, now: Millis) {
        let Role::Leader(l) = &mut self.role else {
            unreachable!("checked by on_fetch")
        };
        let progress = l.followers.get_mut(&request.follower).expect("a replica");
        progress.log_end = request.fetch_offset;
        if request.fetch_offset >= log_end {
            progress.caught_up_at = now;
        }
    }

    /// A follower outside the ISR that holds everything up to the high watermark and this
    /// epoch's first record joins it (once the store says so).
    fn expansion(&mut self, follower: NodeId) -> Option<IsrChange> {
        let Role::Leader(l) = &mut self.role else {
            return None;
        };
        let log_end = l.followers[&follower].log_end;
        let caught_up = log_end >= self.high_watermark && log_end >= l.epoch_start;
        if l.isr.contains(&follower) || l.pending.is_some() || !caught_up {
            return None;
        }
        let mut isr = l.isr.clone();
        isr.push(follower);
        Some(propose(self.me, l, isr))
    }

    /// As leader: the followers that have not caught up for `max_lag` leave the ISR.
    pub fn check_isr(&mut self, now: Millis, max_lag: Millis) -> Option<IsrChange> {
        let Role::Leader(l) = &mut self.role else {
            return None;
        };
        if l.pending.is_some() {
            return None;
        }
        let lagging = |r: &NodeId| *r != self.me && now - l.followers[r].caught_up_at > max_lag;
        if !l.isr.iter().any(lagging) {
            return None;
        }
        let isr: Vec<NodeId> = l.isr.iter().copied().filter(|r| !lagging(r)).collect();
        Some(propose(self.me, l, isr))
    }

    /// The ISR change sent and not yet seen back in the store. It is cleared only by a
    /// newer state (which it can no longer land on): a lost request is sent again as it
    /// was, never replaced, so a late copy can never land after the leader gave it up.
    pub fn pending_isr_change(&self) -> Option<IsrChange> {
        let Role::Leader(l) = &self.role else {
            return None;
        };
        let isr = l.pending.clone()?;
        Some(IsrChange {
            leader: self.me,
            leader_epoch: l.epoch,
            partition_epoch: l.partition_epoch,
            isr,
        })
    }

    /// As leader: how far behind each follower is, as (follower, records behind this
    /// log end, milliseconds since it was last caught up). A follower that has not
    /// fetched yet is behind by the whole log.
    pub fn follower_lags(&self, log_end: Offset, now: Millis) -> Vec<(NodeId, Offset, Millis)> {
        let Role::Leader(l) = &self.role else {
            return Vec::new();
        };
        let lag = |(&id, p): (&NodeId, &Progress)| {
            let behind = (log_end - p.log_end.max(0)).max(0);
            (id, behind, (now - p.caught_up_at).max(0))
        };
        l.followers.iter().map(lag).collect()
    }

    /// The store refused the proposed ISR change for good (it adds a replica that is not
    /// eligible: KIP-497's INELIGIBLE_REPLICA, e.g. one in controlled shutdown). The
    /// refusal may come from a check against a stale view while an earlier copy of the
    /// same proposal already landed, so the leader does not simply forget it: it proposes
    /// the ISR the store holds again (a fence: the next partition epoch, so no older
    /// proposal can land after it) and keeps waiting for the abandoned members until a
    /// newer state is applied. Then the high watermark stops waiting for them. A refusal
    /// of another change than the one pending is stale.
    pub fn abandon_isr_change(&mut self, change: &IsrChange, log_end: Offset) {
        let me = self.me;
        let Role::Leader(l) = &mut self.role else {
            return;
        };
        let pending = l.epoch == change.leader_epoch
            && l.partition_epoch == change.partition_epoch
            && l.pending.as_ref() == Some(&change.isr);
        if !pending || change.isr == l.isr {
            return; // stale, or the fence itself (only a newer state ends it)
        }
        for r in &change.isr {
            if !l.isr.contains(r) && !l.abandoned.contains(r) {
                l.abandoned.push(*r);
            }
        }
        let fence = l.isr.clone();
        propose(me, l, fence);
        self.advance_high_watermark(log_end);
    }

    /// The high watermark is the smallest log end among the ISR and any proposed ISR; it
    /// never moves back.
    fn advance_high_watermark(&mut self, log_end: Offset) {
        let Role::Leader(l) = &self.role else { return };
        let members = (l.isr.iter())
            .chain(l.pending.iter().flatten())
            .chain(l.abandoned.iter());
        let end_of = |r: &NodeId| match *r == self.me {
            true => log_end,
            false => l.followers.get(r).map_or(UNDEFINED, |p| p.log_end),
        };
        let smallest = members.map(end_of).min().unwrap_or(UNDEFINED);
        self.high_watermark = self.high_watermark.max(smallest);
        assert!(
            self.high_watermark <= log_end,
            "the high watermark passed the log end"
        );
    }

    /// As follower: the next fetch to send, if there is a leader to send it to. It
    /// supersedes every earlier one.
    pub fn fetch_request(&mut self, log_end: Offset) -> Option<(NodeId, FetchRequest)> {
        let Role::Follower {
            leader: Some(leader),
            epoch,
        } = self.role
        else {
            return None;
        };
        self.last_fetch += 1;
        let request = FetchRequest {
            correlation: self.last_fetch,
            follower: self.me,
            fetch_offset: log_end,
            last_fetched_epoch: self.epochs.latest().map(|e| e.epoch),
            current_leader_epoch: epoch,
        };
        Some((leader, request))
    }

    /// As follower: the leader said the logs disagree from `end_offset`. Returns where to
    /// truncate the log to, or None when the answer is stale.
    pub fn on_diverging(
        &mut self,
        answered: &FetchRequest,
        (epoch, end_offset): (Epoch, Offset),
        log_end: Offset,
    ) -> Option<Offset> {
        let current = self.answers_latest(answered.correlation, answered.current_leader_epoch);
        if !current || answered.fetch_offset != log_end {
            return None;
        }
        let end = self.agreed_end((epoch, end_offset), log_end);
        assert!(
            end <= log_end,
            "truncation to {end} past the log end {log_end}"
        );
        self.epochs.truncate_from_end(end);
        self.high_watermark = self.high_watermark.min(end);
        Some(end)
    }

    /// Where this log stops agreeing with the leader's, which holds `epoch` up to
    /// `end_offset` (Kafka's follower truncation, KIP-279): the smaller of both ends of
    /// that epoch when this log has it too. When this log's largest epoch at or below it is
    /// an older one, the records past that one's end cannot be the leader's (the leader
    /// never had the epochs between): truncate there, and the next fetch asks again. A
    /// leader or a log without any shared epoch keeps only what is known committed.
    fn agreed_end(&self, (epoch, end_offset): (Epoch, Offset), log_end: Offset) -> Offset {
        let committed = self.high_watermark.min(log_end);
        if epoch as i64 == UNDEFINED {
            return committed;
        }
        let end = match self.epochs.end_offset_for(epoch, log_end) {
            (ours, _) if ours as i64 == UNDEFINED => committed,
            (ours, our_end) if ours == epoch => end_offset.min(our_end),
            (_, our_end) => our_end,
        };
        end.min(log_end)
    }

    /// As follower: whether to append the records of a fetch answer (`runs`: the first
    /// offset of each epoch among them). A stale answer (another epoch, or for an offset
    /// the log has moved from) is dropped.
    pub fn on_records(&mut self, received: Received, runs: &[EpochEntry], log_end: Offset) -> bool {
        let current = self.answers_latest(received.correlation, received.leader_epoch);
        if !current || received.fetch_offset != log_end {
            return false;
        }
        for run in runs {
            if self.epochs.latest().is_none_or(|l| run.epoch > l.epoch) {
                self.epochs.assign(run.epoch, run.start_offset);
            }
        }
        let known = received.high_watermark.min(received.new_end);
        self.high_watermark = self.high_watermark.max(known);
        true
    }

    /// Whether an answer is to the latest fetch, sent in the epoch still followed.
    fn answers_latest(&self, correlation: u64, leader_epoch: Epoch) -> bool {
        let following = matches!(self.role, Role::Follower { epoch, .. } if epoch == leader_epoch);
        following && correlation == self.last_fetch
    }
}

/// Kafka's fencing of a request's leader epoch (KIP-320).
fn check_epoch(requested: Epoch, current: Epoch) -> Result<(), ReplicaError> {
    match requested.cmp(&current) {
        std::cmp::Ordering::Less => Err(ReplicaError::FencedLeaderEpoch),
        std::cmp::Ordering::Greater => Err(ReplicaError::UnknownLeaderEpoch),
        std::cmp::Ordering::Equal => Ok(()),
    }
}

impl Leadership {
    /// The followers are the other replicas (a reassignment adds and removes some within
    /// an epoch): a new one starts unknown, a removed one's progress goes.
    fn follow_replicas(&mut self, me: NodeId, replicas: &[NodeId], now: Millis) {
        self.followers.retain(|r, _| replicas.contains(r));
        for &r in replicas.iter().filter(|&&r| r != me) {
            self.followers.entry(r).or_insert(Progress {
                log_end: UNDEFINED,
                caught_up_at: now,
            });
        }
        assert!(
            !self.followers.contains_key(&me),
            "a leader never follows itself"
        );
    }
}

fn propose(me: NodeId, l: &mut Leadership, isr: Vec<NodeId>) -> IsrChange {
    assert!(isr.contains(&me), "a leader stays in its ISR");
    l.pending = Some(isr.clone());
    IsrChange {
        leader: me,
        leader_epoch: l.epoch,
        partition_epoch: l.partition_epoch,
        isr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_follows_a_reassignment_and_a_removed_replica_stops_only_on_a_newer_state() {
        let (mut r, _) = leading_with_3_proposed();
        let base = PartitionState {
            replicas: vec![1, 2, 3, 4],
            isr: vec![1, 2],
            leader: Some(1),
            leader_epoch: 0,
            leader_broker_epoch: 7,
            partition_epoch: 1,
            adding: vec![4],
            removing: vec![3],
        };
        r.apply(&base, 7, 10, 0);
        let lags = r.follower_lags(10, 0);
        let followers: Vec<NodeId> = lags.iter().map(|l| l.0).collect();
        assert_eq!(
            followers,
            [2, 3, 4],
            "4 is followed at once, in the same epoch"
        );
        let moved = PartitionState {
            replicas: vec![2, 4],
            isr: vec![2, 4],
            leader: Some(2),
            leader_epoch: 1,
            partition_epoch: 2,
            adding: vec![],
            removing: vec![],
            ..base.clone()
        };
        assert!(!r.stop(&base), "a state naming it is no reason to stop");
        assert!(r.stop(&moved));
        assert_eq!((r.role(), r.high_watermark()), (&Role::Unattached, 0));
        assert!(
            r.epochs().entries().is_empty(),
            "its copy is emptied with it"
        );
        assert!(!r.stop(&moved), "the same state again changes nothing");
    }

    /// A follower that led epoch 5 briefly (its offsets 100..104) meets a leader whose log
    /// holds epoch 4 up to 104: the two logs agree only below 100, where the follower's
    /// epoch 5 begins (KIP-279). Truncating to the leader's 104 kept the divergent records
    /// and the follower asked with epoch 5 for ever (a seed of the replication simulator).
    #[test]
    fn a_follower_truncates_to_where_both_logs_hold_the_leaders_epoch() {
        let mut epochs = EpochCache::default();
        epochs.assign(4, 0);
        epochs.assign(5, 100);
        let mut r = Replica::new(2, epochs, 93);
        let state = PartitionState {
            leader_epoch: 7,
            ..led_by_1(3)
        };
        r.apply(&state, 7, 104, 0);
        let (leader, fetch) = r.fetch_request(104).expect("a follower fetches");
        assert_eq!((leader, fetch.last_fetched_epoch), (1, Some(5)));
        assert_eq!(r.on_diverging(&fetch, (4, 104), 104), Some(100));
        assert_eq!(r.epochs().latest().map(|e| e.epoch), Some(4));
        let (_, again) = r.fetch_request(100).expect("it fetches again");
        assert_eq!(
            (again.fetch_offset, again.last_fetched_epoch),
            (100, Some(4))
        );
        // A log whose latest shared epoch is older stops where that one ends.
        let mut older = EpochCache::default();
        older.assign(2, 0);
        older.assign(6, 50);
        let mut r = Replica::new(2, older, 40);
        r.apply(&state, 7, 80, 0);
        let (_, fetch) = r.fetch_request(80).expect("a follower fetches");
        assert_eq!(r.on_diverging(&fetch, (4, 70), 80), Some(50));
        // No shared epoch at all: only what is known committed stays.
        let mut none = EpochCache::default();
        none.assign(6, 0);
        let mut r = Replica::new(2, none, 30);
        r.apply(&state, 7, 80, 0);
        let (_, fetch) = r.fetch_request(80).expect("a follower fetches");
        assert_eq!(r.on_diverging(&fetch, (4, 70), 80), Some(30));
    }

    /// Node 1 leading replicas [1, 2, 3] in epoch 0 with ISR [1, 2] at `partition_epoch`.
    fn led_by_1(partition_epoch: i32) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2],
            leader: Some(1),
            leader_epoch: 0,
            leader_broker_epoch: 7,
            partition_epoch,
            adding: vec![],
            removing: vec![],
        }
    }

    /// Node 1 leads with ISR [1, 2]; replica 3 caught up at offset 10.
    fn leading_with_3_proposed() -> (Replica, IsrChange) {
        let mut r = Replica::new(1, EpochCache::default(), 0);
        r.apply(&led_by_1(0), 7, 10, 0);
        let fetch = |follower| FetchRequest {
            follower,
            fetch_offset: 10,
            last_fetched_epoch: None,
            current_leader_epoch: 0,
            correlation: 1,
        };
        r.on_fetch(fetch(2), 10, 0, |_| true).unwrap();
        let (_, change) = r.on_fetch(fetch(3), 10, 0, |_| true).unwrap();
        (r, change.expect("3 caught up: proposed"))
    }

    #[test]
    fn a_leader_knows_how_far_behind_each_follower_is() {
        let (mut r, _) = leading_with_3_proposed();
        r.appended(25);
        assert_eq!(r.follower_lags(25, 400), [(2, 15, 400), (3, 15, 400)]);
        let follower = Replica::new(2, EpochCache::default(), 0);
        assert!(
            follower.follower_lags(25, 400).is_empty(),
            "only a leader knows"
        );
    }

    #[test]
    fn an_isr_change_refused_for_good_is_dropped_and_stops_holding_the_high_watermark() {
        let (mut r, change) = leading_with_3_proposed();
        assert_eq!(change.isr, [1, 2, 3]);
        r.appended(20);
        let fetch_2 = FetchRequest {
            follower: 2,
            fetch_offset: 20,
            last_fetched_epoch: Some(0),
            current_leader_epoch: 0,
            correlation: 2,
        };
        r.on_fetch(fetch_2, 20, 1, |_| false).unwrap();
        assert_eq!(r.high_watermark(), 10, "the proposed member 3 holds it");
        let stale = IsrChange {
            partition_epoch: 5,
            ..change.clone()
        };
        r.abandon_isr_change(&stale, 20);
        assert_eq!(r.high_watermark(), 10, "another change's refusal is stale");
        r.abandon_isr_change(&change, 20);
        let fence = r
            .pending_isr_change()
            .expect("the store's ISR proposed again");
        assert_eq!(
            (fence.isr.as_slice(), fence.partition_epoch),
            ([1, 2].as_slice(), 0)
        );
        assert_eq!(
            r.high_watermark(),
            10,
            "the abandoned proposal may still land: 3 holds it until a newer state"
        );
        // The fence lands (the next partition epoch, the same ISR): 3 no longer counts.
        r.apply(&led_by_1(1), 7, 20, 2);
        assert_eq!(r.pending_isr_change(), None);
        assert_eq!(r.high_watermark(), 20, "the ISR the store holds has it all");
    }
}
