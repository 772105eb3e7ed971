//! JoinGroup, SyncGroup, Heartbeat and LeaveGroup on the coordinator shard, with Kafka's
//! classic rebalance: a join moves the group to PreparingRebalance and parks the request;
//! the join phase ends when every member has rejoined or the rebalance timeout passes
//! (from Empty, after `group.initial.rebalance.delay.ms` first); then the generation goes
//! up, a protocol is chosen by vote, the leader gets every member's metadata, and the
//! group waits in CompletingRebalance for the leader's SyncGroup, whose assignments answer
//! the parked SyncGroups. Members that stop heartbeating are removed after their session
//! timeout. Waiting is on local channels and timers, never by polling.

use std::time::{Duration, Instant};

use glommio::channels::local_channel;

use super::code::{self as e, GroupCode};
use super::coordinator::{store, store_detached, with_group};
use super::group::{Group, Member, State};
use super::group_records::GroupRecord;
use super::host::Host;
use super::ops::{JoinRequest, JoinResponse, SyncRequest, SyncResponse};
use super::static_members::{self, StaticJoin};
use crate::io::deadline::before;

fn join_error(error: GroupCode, member_id: &str) -> JoinResponse {
    JoinResponse {
        error,
        member_id: member_id.to_string(),
        generation: -1,
        ..Default::default()
    }
}

fn new_member_id(client_id: &str) -> String {
    format!(
        "{client_id}-{:016x}{:016x}",
        fastrand::u64(..),
        fastrand::u64(..)
    )
}

pub async fn join(shard: &Host, group: &str, req: JoinRequest) -> JoinResponse {
    let cfg = shard.settings();
    if !(cfg.group_min_session_timeout_ms..=cfg.group_max_session_timeout_ms)
        .contains(&req.session_timeout_ms)
    {
        return join_error(e::INVALID_SESSION_TIMEOUT, &req.member_id);
    }
    let (tx, rx) = local_channel::new_bounded(1);
    if let Some(answer) = with_group(group, |g| admit(shard, group, g, &req, tx)) {
        if answer.error != e::NONE || answer.member_id == req.member_id {
            return answer;
        }
        // A static member took its place under a new member id without a rebalance: stored
        // before the answer, so the old id stays fenced after a restart too.
        let rec = with_group(group, |g| GroupRecord::of(group, g, crate::time::now_ms()));
        return match store(shard, &rec).await {
            e::NONE => answer,
            failed => join_error(failed, &req.member_id),
        };
    }
    rx.recv()
        .await
        .unwrap_or_else(|| join_error(e::UNKNOWN_MEMBER_ID, &req.member_id))
}

/// Adds or updates the member and parks its join (`None`), or answers at once.
fn admit(
    shard: &Host,
    name: &str,
    g: &mut Group,
    req: &JoinRequest,
    waiter: local_channel::LocalSender<JoinResponse>,
) -> Option<JoinResponse> {
    if !g.supports(&req.protocol_type, &req.protocols) {
        return Some(join_error(e::INCONSISTENT_GROUP_PROTOCOL, &req.member_id));
    }
    let member_id = match member_id_for(shard, name, g, req) {
        Ok(id) => id,
        Err(answer) => return Some(*answer),
    };
    if g.members.is_empty() {
        g.protocol_type = Some(req.protocol_type.clone());
    }
    if let Some(current) = unchanged_follower(g, &member_id, req) {
        return Some(current);
    }
    let m = g.members.entry(member_id).or_insert_with(|| Member {
        group_instance_id: req.group_instance_id.clone(),
        client_id: req.client_id.clone(),
        client_host: req.client_host.clone(),
        session_timeout_ms: req.session_timeout_ms,
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        protocols: Vec::new(),
        assignment: Default::default(),
        join_waiter: None,
        sync_waiter: None,
        deadline: Instant::now(),
    });
    m.protocols = req.protocols.clone();
    m.session_timeout_ms = req.session_timeout_ms;
    m.rebalance_timeout_ms = req.rebalance_timeout_ms;
    m.join_waiter = Some(waiter);
    m.touch();
    prepare_rebalance(shard, name, g);
    // A parked join belongs to a member of a group in its join phase, which answers it.
    assert_eq!(g.state, State::PreparingRebalance);
    assert!(g.protocol_type.as_deref() == Some(req.protocol_type.as_str()));
    watch_sessions(shard, name, g);
    None
}

/// The member id a JoinGroup joins under, or the answer it gets at once: a static member
/// (KIP-345) by its instance id, a dynamic one by the id it was handed (v4+: first
/// MEMBER_ID_REQUIRED with a pending id; v0-3: a new id at once).
fn member_id_for(
    shard: &Host,
    name: &str,
    g: &mut Group,
    req: &JoinRequest,
) -> Result<String, Box<JoinResponse>> {
    if let Some(instance) = &req.group_instance_id {
        return match static_members::join(g, req, instance, new_member_id(&req.client_id)) {
            StaticJoin::Answer(answer) => Err(Box::new(answer)),
            StaticJoin::Join(id) => Ok(id),
        };
    }
    if req.member_id.is_empty() {
        let id = new_member_id(&req.client_id);
        if req.require_known_member_id {
            // Pending until it rejoins with the id; an id never used expires with the
            // session timeout (the session watcher removes it).
            let expiry = Duration::from_millis(req.session_timeout_ms as u64);
            g.pending.insert(id.clone(), Instant::now() + expiry);
            watch_sessions(shard, name, g);
            return Err(Box::new(join_error(e::MEMBER_ID_REQUIRED, &id)));
        }
        // JoinGroup v0-3: the member joins under a new id at once.
        return Ok(id);
    }
    let known =
        g.members.contains_key(&req.member_id) || g.pending.remove(&req.member_id).is_some();
    if !known {
        return Err(Box::new(join_error(e::UNKNOWN_MEMBER_ID, &req.member_id)));
    }
    Ok(req.member_id.clone())
}

/// Kafka's shortcut: a follower of a Stable group rejoining with the same protocols gets
/// the current generation back without a rebalance.
fn unchanged_follower(g: &mut Group, member_id: &str, req: &JoinRequest) -> Option<JoinResponse> {
    if g.state != State::Stable || g.leader.as_deref() == Some(member_id) {
        return None;
    }
    // Members leave a Stable group only through a rebalance: its leader is one of them.
    assert!(g.leader.as_ref().is_some_and(|l| g.members.contains_key(l)));
    let m = g.members.get_mut(member_id)?;
    if m.protocols != req.protocols {
        return None;
    }
    m.touch();
    Some(JoinResponse {
        error: e::NONE,
        generation: g.generation,
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol.clone(),
        leader: g.leader.clone().unwrap_or_default(),
        member_id: member_id.to_string(),
        members: Vec::new(),
    })
}

/// Moves the group to PreparingRebalance (starting its join phase) or wakes the running one.
pub fn prepare_rebalance(shard: &Host, name: &str, g: &mut Group) {
    if g.state == State::PreparingRebalance {
        if let Some(n) = &g.nudge {
            let _ = n.try_send(());
        }
        return;
    }
    let from_empty = g.state == State::Empty;
    g.fail_parked_syncs(e::REBALANCE_IN_PROGRESS);
    g.state = State::PreparingRebalance;
    let (tx, rx) = local_channel::new_bounded(64);
    g.nudge = Some(tx);
    let timeout = g
        .members
        .values()
        .map(|m| m.rebalance_timeout_ms.max(0) as u64)
        .max()
        .unwrap_or(0);
    let initial = if from_empty {
        shard.settings().group_initial_rebalance_delay_ms
    } else {
        0
    };
    let (shard, name) = (shard.clone(), name.to_string());
    // Started after the caller's borrow of the group ends.
    crate::tasks::spawn_later(async move {
        let deadline = Instant::now() + Duration::from_millis(timeout.max(initial));
        if from_empty {
            initial_delay(&name, Duration::from_millis(initial), deadline).await;
        } else {
            wait_for_rejoins(&name, &rx, deadline).await;
        }
        if with_group(&name, |g| {
            complete_join(g);
            g.state == State::Empty
        }) {
            // Kafka stores the emptied group's new generation too.
            store_detached(&shard, &name);
        }
    })
    .detach();
}

/// Kafka's first join phase of an empty group: `group.initial.rebalance.delay.ms`, once
/// more each time members arrived meanwhile (up to the rebalance timeout). Member ids handed
/// out and not used yet do not hold it up: those members join the next generation.
async fn initial_delay(name: &str, delay: Duration, deadline: Instant) {
    loop {
        let members = with_group(name, |g| g.members.len());
        let left = deadline.saturating_duration_since(Instant::now());
        glommio::timer::sleep(delay.min(left)).await;
        let arrived = with_group(name, |g| g.members.len() > members);
        if !arrived || Instant::now() >= deadline {
            return;
        }
    }
}

/// A rebalance of a group with members: until every member and every pending member id
/// has (re)joined, or the rebalance timeout. Pending ids expire with their session timeout
/// (the session watcher nudges this wait when one does).
async fn wait_for_rejoins(
    name: &str,
    nudged: &local_channel::LocalReceiver<()>,
    deadline: Instant,
) {
    loop {
        if with_group(name, |g| g.all_joined()) {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || before(left, nudged.recv()).await.is_none() {
            return;
        }
    }
}

/// Ends the join phase: members that did not rejoin leave; a new generation starts.
fn complete_join(g: &mut Group) {
    assert_eq!(
        g.state,
        State::PreparingRebalance,
        "a join phase ends only once begun"
    );
    g.nudge = None;
    g.members.retain(|_, m| m.join_waiter.is_some());
    let before = g.generation;
    g.generation += 1;
    assert!(g.generation > before, "each rebalance is a new generation");
    if g.members.is_empty() {
        g.state = State::Empty;
        g.protocol = None;
        g.leader = None;
        return;
    }
    g.protocol = g.select_protocol();
    if g.leader.as_ref().is_none_or(|l| !g.members.contains_key(l)) {
        g.leader = g.members.keys().next().cloned();
    }
    g.state = State::CompletingRebalance;
    // A group with members has a leader among them.
    assert!(g.leader.as_ref().is_some_and(|l| g.members.contains_key(l)));
    let protocol = g.protocol.clone().unwrap_or_default();
    let leader = g.leader.clone().unwrap_or_default();
    let everyone: Vec<_> = g
        .members
        .iter()
        .map(|(id, m)| {
            (
                id.clone(),
                m.group_instance_id.clone(),
                m.metadata_for(&protocol),
            )
        })
        .collect();
    for (id, m) in g.members.iter_mut() {
        m.touch();
        let Some(w) = m.join_waiter.take() else {
            continue;
        };
        let _ = w.try_send(JoinResponse {
            error: e::NONE,
            generation: g.generation,
            protocol_type: g.protocol_type.clone(),
            protocol_name: Some(protocol.clone()),
            leader: leader.clone(),
            member_id: id.clone(),
            members: if *id == leader {
                everyone.clone()
            } else {
                Vec::new()
            },
        });
    }
}

fn sync_error(error: GroupCode) -> SyncResponse {
    SyncResponse {
        error,
        ..Default::default()
    }
}

/// What a SyncGroup does next.
enum SyncStep {
    Answer(SyncResponse),
    /// Parked until the leader's assignments are stored (or the generation ends).
    Wait,
    /// The leader's assignments: store them, then the generation is Stable.
    Store(GroupRecord),
}

pub async fn sync(shard: &Host, group: &str, req: SyncRequest) -> SyncResponse {
    let (tx, rx) = local_channel::new_bounded(1);
    let step = with_group(group, |g| park_sync(group, g, &req, tx));
    match step {
        SyncStep::Answer(response) => return response,
        SyncStep::Wait => {}
        SyncStep::Store(rec) => {
            let stored = store(shard, &rec).await;
            with_group(group, |g| {
                assignments_stored(shard, group, g, req.generation, stored)
            });
        }
    }
    rx.recv()
        .await
        .unwrap_or_else(|| sync_error(e::REBALANCE_IN_PROGRESS))
}

/// The leader's assignments for `generation` are stored (or storing them failed, and the
/// group rebalances, as in Kafka): a generation still current becomes Stable and every
/// parked SyncGroup gets its assignment.
fn assignments_stored(shard: &Host, name: &str, g: &mut Group, generation: i32, code: GroupCode) {
    g.storing = false;
    if g.generation != generation || g.state != State::CompletingRebalance {
        // The generation ended meanwhile; its parked syncs were answered then.
        return;
    }
    if code != e::NONE {
        for m in g.members.values_mut() {
            m.assignment = Default::default();
        }
        g.fail_parked_syncs(code);
        prepare_rebalance(shard, name, g);
        return;
    }
    g.state = State::Stable;
    let ids: Vec<String> = g.members.keys().cloned().collect();
    for id in ids {
        let reply = assignment_of(g, &id);
        if let Some(w) = g.members.get_mut(&id).and_then(|m| m.sync_waiter.take()) {
            let _ = w.try_send(reply);
        }
    }
    // Stable: every parked sync of this generation has its assignment.
    assert!(g.members.values().all(|m| m.sync_waiter.is_none()));
}

/// Checks a SyncGroup: answers it at once, parks it, or (the leader's) stores the
/// generation's assignments.
fn park_sync(
    name: &str,
    g: &mut Group,
    req: &SyncRequest,
    waiter: local_channel::LocalSender<SyncResponse>,
) -> SyncStep {
    let answer = SyncStep::Answer;
    let fenced = static_members::check_fenced(g, &req.member_id, req.group_instance_id.as_deref());
    if fenced != e::NONE {
        return answer(sync_error(fenced));
    }
    let Some(m) = g.members.get_mut(&req.member_id) else {
        return answer(sync_error(e::UNKNOWN_MEMBER_ID));
    };
    m.touch();
    if req.generation != g.generation {
        return answer(sync_error(e::ILLEGAL_GENERATION));
    }
    let mismatch = |mine: &Option<String>, theirs: &Option<String>| {
        theirs.is_some() && mine.is_some() && mine != theirs
    };
    if mismatch(&g.protocol_type, &req.protocol_type) || mismatch(&g.protocol, &req.protocol_name) {
        return answer(sync_error(e::INCONSISTENT_GROUP_PROTOCOL));
    }
    match g.state {
        State::Empty | State::Dead => answer(sync_error(e::UNKNOWN_MEMBER_ID)),
        State::PreparingRebalance => answer(sync_error(e::REBALANCE_IN_PROGRESS)),
        State::Stable => answer(assignment_of(g, &req.member_id)),
        State::CompletingRebalance => {
            m.sync_waiter = Some(waiter);
            let leads = g.leader.as_deref() == Some(req.member_id.as_str());
            if !leads || g.storing {
                return SyncStep::Wait;
            }
            // Kafka's rule: the leader's assignments replace everyone's; a member it left
            // out gets nothing, never what it held in an earlier generation.
            for (id, member) in g.members.iter_mut() {
                member.assignment = req
                    .assignments
                    .iter()
                    .find(|(to, _)| to == id)
                    .map(|(_, a)| a.clone())
                    .unwrap_or_default();
            }
            g.storing = true;
            SyncStep::Store(GroupRecord::of(name, g, crate::time::now_ms()))
        }
    }
}

fn assignment_of(g: &Group, member_id: &str) -> SyncResponse {
    SyncResponse {
        error: e::NONE,
        protocol_type: g.protocol_type.clone(),
        protocol_name: g.protocol.clone(),
        assignment: g
            .members
            .get(member_id)
            .map(|m| m.assignment.clone())
            .unwrap_or_default(),
    }
}

pub fn heartbeat(
    group: &str,
    member_id: &str,
    instance: Option<&str>,
    generation: i32,
) -> GroupCode {
    with_group(group, |g| {
        let fenced = static_members::check_fenced(g, member_id, instance);
        if fenced != e::NONE {
            return fenced;
        }
        let Some(m) = g.members.get_mut(member_id) else {
            return e::UNKNOWN_MEMBER_ID;
        };
        m.touch();
        if generation != g.generation {
            return e::ILLEGAL_GENERATION;
        }
        match g.state {
            State::PreparingRebalance => e::REBALANCE_IN_PROGRESS,
            State::Empty | State::Dead => e::UNKNOWN_MEMBER_ID,
            State::CompletingRebalance | State::Stable => e::NONE,
        }
    })
}

/// Removes members (a static one may be named by its instance id alone); the rest
/// rebalance. UNKNOWN_MEMBER_ID if none of them was a member, FENCED_INSTANCE_ID when an
/// instance id is bound to another member id than the one given. A group the leave empties
/// is stored Empty before the answer, so the members are gone after a restart too.
pub async fn leave(shard: &Host, group: &str, members: &[(String, Option<String>)]) -> GroupCode {
    let (code, emptied) = with_group(group, |g| remove_members(shard, group, g, members));
    match emptied {
        Some(rec) => match store(shard, &rec).await {
            e::NONE => code,
            failed => failed,
        },
        None => code,
    }
}

fn remove_members(
    shard: &Host,
    group: &str,
    g: &mut Group,
    members: &[(String, Option<String>)],
) -> (GroupCode, Option<GroupRecord>) {
    {
        let mut ids = Vec::with_capacity(members.len());
        for (member_id, instance) in members {
            match instance.as_deref().map(|i| static_members::member_of(g, i)) {
                Some(Some(bound)) if !member_id.is_empty() && bound != *member_id => {
                    return (e::FENCED_INSTANCE_ID, None)
                }
                Some(Some(bound)) => ids.push(bound),
                _ => ids.push(member_id.clone()),
            }
        }
        let before = g.members.len();
        for id in &ids {
            if let Some(m) = g.members.remove(id) {
                drop((m.join_waiter, m.sync_waiter));
            }
            g.pending.remove(id);
        }
        if g.members.len() == before {
            return (e::UNKNOWN_MEMBER_ID, None);
        }
        assert!(ids.iter().all(|id| !g.members.contains_key(id)));
        (e::NONE, members_changed(shard, group, g))
    }
}

/// After members were removed: the survivors rebalance; an emptied group becomes Empty,
/// and the record that stores it so is returned (the caller writes it).
fn members_changed(shard: &Host, name: &str, g: &mut Group) -> Option<GroupRecord> {
    if g.members.is_empty() && g.state != State::PreparingRebalance {
        g.fail_parked_syncs(e::REBALANCE_IN_PROGRESS);
        g.state = State::Empty;
        g.generation += 1;
        g.protocol = None;
        g.leader = None;
        return Some(GroupRecord::of(name, g, crate::time::now_ms()));
    }
    prepare_rebalance(shard, name, g);
    // Survivors always rebalance: none keeps an assignment that counted the departed.
    assert_eq!(g.state, State::PreparingRebalance);
    None
}

/// Starts the group's session watcher if it has none: it sleeps until the earliest
/// member deadline, removes members past theirs (not those parked in a join), and stops
/// when the group has no members left.
pub(super) fn watch_sessions(shard: &Host, name: &str, g: &mut Group) {
    if g.expiry_running {
        return;
    }
    g.expiry_running = true;
    let (shard, name) = (shard.clone(), name.to_string());
    // Started after the caller's borrow of the group ends.
    crate::tasks::spawn_later(async move {
        loop {
            let next = with_group(&name, |g| expire(&shard, &name, g));
            match next {
                Some(at) => {
                    let wait = at.saturating_duration_since(Instant::now());
                    glommio::timer::sleep(wait.max(Duration::from_millis(1))).await;
                }
                None => break,
            }
        }
    })
    .detach();
}

/// Answers every parked JoinGroup and SyncGroup of a group this node no longer
/// coordinates with NOT_COORDINATOR (the members find the new coordinator).
pub(super) fn release_waiters(g: &mut Group) {
    for (id, m) in g.members.iter_mut() {
        if let Some(w) = m.join_waiter.take() {
            let _ = w.try_send(join_error(e::NOT_COORDINATOR, id));
        }
        if let Some(w) = m.sync_waiter.take() {
            let _ = w.try_send(sync_error(e::NOT_COORDINATOR));
        }
    }
}

/// Expires what is due; returns when to look again, or `None` (and stops watching) when
/// nothing is left to watch.
fn expire(shard: &Host, name: &str, g: &mut Group) -> Option<Instant> {
    let now = Instant::now();
    let pending = g.pending.len();
    g.pending.retain(|_, due| *due > now);
    if g.pending.len() < pending && g.state == State::PreparingRebalance {
        // A join phase may have been waiting for the ids that just expired.
        if let Some(n) = &g.nudge {
            let _ = n.try_send(());
        }
    }
    let expired: Vec<String> = g
        .members
        .iter()
        .filter(|(_, m)| m.join_waiter.is_none() && m.deadline <= now)
        .map(|(id, _)| id.clone())
        .collect();
    for id in &expired {
        tracing::info!(group = name, member = %id, "member session expired");
        g.members.remove(id);
    }
    // Nothing waits on an expiry: an emptied group is stored by a task of its own.
    if !expired.is_empty() && members_changed(shard, name, g).is_some() {
        store_detached(shard, name);
    }
    // Only members parked in a join (their deadline starts after it) outlive their session.
    debug_assert!(g
        .members
        .values()
        .all(|m| m.join_waiter.is_some() || m.deadline > now));
    let next = g
        .members
        .values()
        .filter(|m| m.join_waiter.is_none())
        .map(|m| m.deadline)
        .chain(g.pending.values().copied())
        .min();
    match next {
        Some(at) => Some(at),
        // Only members parked in a join: their deadlines start when it ends.
        None if !g.members.is_empty() => Some(now + Duration::from_secs(1)),
        None => {
            g.expiry_running = false;
            None
        }
    }
}
