//! The group coordinator's join phase as Kafka runs it, through a real server's Kafka
//! listener: a group formed from empty completes after `group.initial.rebalance.delay.ms`
//! (extended while members keep arriving), and member ids handed out with
//! MEMBER_ID_REQUIRED but never used neither hold up a join phase nor keep the group alive.

use crate::common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::server_proc::ServerProc;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::kafka::blocking_client::BlockingClient;

const MEMBER_ID_REQUIRED: i16 = 79;
/// Far longer than the join phases measured here: a phase waiting on a session would show.
const SESSION_MS: i32 = 20_000;

fn connect(addr: &str) -> BlockingClient {
    BlockingClient::connect_with_timeout(addr, Duration::from_secs(60)).unwrap()
}

fn join_request(group: &str, member: &str, session_ms: i32) -> RequestKind {
    RequestKind::JoinGroup(
        JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.into())))
            .with_session_timeout_ms(session_ms)
            .with_rebalance_timeout_ms(2 * SESSION_MS)
            .with_member_id(StrBytes::from_string(member.into()))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
            )
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(Bytes::from_static(b"meta"))]),
    )
}

fn join(c: &mut BlockingClient, group: &str, member: &str, session_ms: i32) -> JoinGroupResponse {
    match c.call(
        ApiKey::JoinGroup,
        5,
        &join_request(group, member, session_ms),
    ) {
        Ok(ResponseKind::JoinGroup(j)) => j,
        other => panic!("JoinGroup: {other:?}"),
    }
}

/// A member id handed out by the coordinator (JoinGroup v5 without one).
fn member_id(c: &mut BlockingClient, group: &str, session_ms: i32) -> String {
    let j = join(c, group, "", session_ms);
    assert_eq!(j.error_code, MEMBER_ID_REQUIRED, "{j:?}");
    j.member_id.to_string()
}

fn server(tmp: &tempfile::TempDir, initial_delay_ms: &str) -> ServerProc {
    ServerProc::start(
        &tmp.path().join("data"),
        2,
        &[
            ("kafka.listen", "auto"),
            ("offsets.topic.num.partitions", "2"),
            ("group.initial.rebalance.delay.ms", initial_delay_ms),
            ("group.min.session.timeout.ms", "500"),
        ],
    )
}

#[test]
fn a_group_formed_from_empty_completes_after_the_initial_delay_despite_an_unused_member_id() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp, "300");
    let kafka = server.kafka_addr();
    let mut c = connect(&kafka);
    // A client that got its id and went away (a crashed consumer, a timed-out request).
    let _unused = member_id(&mut c, "g", SESSION_MS);
    let id = member_id(&mut c, "g", SESSION_MS);
    let started = Instant::now();
    let j = join(&mut c, "g", &id, SESSION_MS);
    let took = started.elapsed();
    eprintln!("join phase from empty with an unused member id: {took:?}");
    assert_eq!(j.error_code, 0, "{j:?}");
    assert_eq!(j.members.len(), 1, "only the member that joined: {j:?}");
    assert_eq!(j.leader.to_string(), id);
    // Kafka completes after the initial delay; waiting on the unused id would take its
    // whole session timeout.
    assert!(
        took < Duration::from_millis(SESSION_MS as u64 / 2),
        "the join phase waited {took:?} for an id nobody used"
    );
}

#[test]
fn late_joiners_within_the_initial_delay_join_the_first_generation() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp, "1500");
    let kafka = server.kafka_addr();
    let ids: Vec<String> = {
        let mut c = connect(&kafka);
        (0..3)
            .map(|_| member_id(&mut c, "late", SESSION_MS))
            .collect()
    };
    // The first member starts the phase; the others arrive 0.5 s apart, inside the delay.
    let joins: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (kafka, id) = (kafka.clone(), id.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500 * i as u64));
                join(&mut connect(&kafka), "late", &id, SESSION_MS)
            })
        })
        .collect();
    let answers: Vec<JoinGroupResponse> = joins.into_iter().map(|t| t.join().unwrap()).collect();
    let generations: Vec<i32> = answers.iter().map(|j| j.generation_id).collect();
    assert!(answers.iter().all(|j| j.error_code == 0), "{answers:?}");
    assert!(
        generations.iter().all(|&g| g == generations[0]),
        "one generation for every member that joined within the delay: {generations:?}"
    );
    let leader = answers.iter().find(|j| !j.members.is_empty()).unwrap();
    assert_eq!(leader.members.len(), 3, "{leader:?}");
}

#[test]
fn an_unused_member_id_expires_and_the_empty_group_can_be_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp, "0");
    let kafka = server.kafka_addr();
    let mut c = connect(&kafka);
    let _unused = member_id(&mut c, "short", 1_000);
    let delete = || {
        RequestKind::DeleteGroups(
            DeleteGroupsRequest::default()
                .with_groups_names(vec![GroupId(StrBytes::from_static_str("short"))]),
        )
    };
    let code = |c: &mut BlockingClient| match c.call(ApiKey::DeleteGroups, 2, &delete()) {
        Ok(ResponseKind::DeleteGroups(r)) => r.results[0].error_code,
        other => panic!("DeleteGroups: {other:?}"),
    };
    const NON_EMPTY_GROUP: i16 = 68;
    assert_eq!(
        code(&mut c),
        NON_EMPTY_GROUP,
        "the pending member counts at first"
    );
    // Its session is 1 s: then the group is empty (or forgotten: GROUP_ID_NOT_FOUND 69).
    let deadline = Instant::now() + Duration::from_secs(15);
    let last = loop {
        let got = code(&mut c);
        if got != NON_EMPTY_GROUP || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        last == 0 || last == 69,
        "the unused id never expired: code {last}"
    );
}

fn static_join(
    c: &mut BlockingClient,
    group: &str,
    instance: &str,
    member: &str,
) -> JoinGroupResponse {
    let RequestKind::JoinGroup(r) = join_request(group, member, SESSION_MS) else {
        unreachable!()
    };
    let r = RequestKind::JoinGroup(
        r.with_group_instance_id(Some(StrBytes::from_string(instance.into()))),
    );
    // The first requests of a group find its offsets partition loading (14, retriable).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match c.call(ApiKey::JoinGroup, 5, &r) {
            Ok(ResponseKind::JoinGroup(j)) if j.error_code == 14 && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(ResponseKind::JoinGroup(j)) => return j,
            other => panic!("JoinGroup: {other:?}"),
        }
    }
}

fn sync(
    c: &mut BlockingClient,
    group: &str,
    j: &JoinGroupResponse,
    assign: &[(&str, &str)],
) -> (i16, Bytes) {
    let r = SyncGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_generation_id(j.generation_id)
        .with_member_id(j.member_id.clone())
        .with_assignments(
            assign
                .iter()
                .map(|(m, a)| {
                    sync_group_request::SyncGroupRequestAssignment::default()
                        .with_member_id(StrBytes::from_string(m.to_string()))
                        .with_assignment(Bytes::from(a.to_string()))
                })
                .collect(),
        );
    match c.call(ApiKey::SyncGroup, 3, &RequestKind::SyncGroup(r)) {
        Ok(ResponseKind::SyncGroup(s)) => (s.error_code, s.assignment),
        other => panic!("SyncGroup: {other:?}"),
    }
}

fn heartbeat(
    c: &mut BlockingClient,
    group: &str,
    member: &str,
    instance: &str,
    generation: i32,
) -> i16 {
    let r = HeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_member_id(StrBytes::from_string(member.into()))
        .with_group_instance_id(Some(StrBytes::from_string(instance.into())))
        .with_generation_id(generation);
    match c.call(ApiKey::Heartbeat, 4, &RequestKind::Heartbeat(r)) {
        Ok(ResponseKind::Heartbeat(h)) => h.error_code,
        other => panic!("Heartbeat: {other:?}"),
    }
}

const FENCED_INSTANCE_ID: i16 = 82;

fn group_state(c: &mut BlockingClient, group: &str) -> String {
    let r = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(StrBytes::from_string(group.into()))]);
    match c.call(ApiKey::DescribeGroups, 5, &RequestKind::DescribeGroups(r)) {
        Ok(ResponseKind::DescribeGroups(d)) => d.groups[0].group_state.to_string(),
        other => panic!("DescribeGroups: {other:?}"),
    }
}

#[test]
fn a_static_member_restarting_keeps_its_assignment_without_a_rebalance() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp, "800");
    let kafka = server.kafka_addr();
    // Two static members form the group (both inside the initial delay).
    let joins: Vec<_> = ["inst-a", "inst-b"]
        .into_iter()
        .map(|instance| {
            let kafka = kafka.clone();
            std::thread::spawn(move || static_join(&mut connect(&kafka), "static", instance, ""))
        })
        .collect();
    let j: Vec<JoinGroupResponse> = joins.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        j.iter().all(|j| j.error_code == 0),
        "static members skip MEMBER_ID_REQUIRED: {j:?}"
    );
    // (response, instance id) of the leader and of the follower.
    let ((leader, leader_instance), (follower, follower_instance)) =
        match j[0].leader == j[0].member_id {
            true => ((j[0].clone(), "inst-a"), (j[1].clone(), "inst-b")),
            false => ((j[1].clone(), "inst-b"), (j[0].clone(), "inst-a")),
        };
    let assign = [
        (leader.member_id.as_str(), "for the leader"),
        (follower.member_id.as_str(), "for the follower"),
    ];
    let waiting = {
        let (kafka, follower) = (kafka.clone(), follower.clone());
        std::thread::spawn(move || sync(&mut connect(&kafka), "static", &follower, &[]))
    };
    let mut c = connect(&kafka);
    assert_eq!(sync(&mut c, "static", &leader, &assign).0, 0);
    assert_eq!(
        waiting.join().unwrap(),
        (0, Bytes::from("for the follower"))
    );
    // The follower restarts: same instance id, no member id. It is back at once, in the
    // same generation, and gets its assignment again; the group does not rebalance.
    let back = static_join(&mut c, "static", follower_instance, "");
    assert_eq!(back.error_code, 0, "{back:?}");
    assert_eq!(
        back.generation_id,
        follower.generation_id,
        "no new generation; server log:\n{}",
        server.log_text()
    );
    assert_ne!(back.member_id, follower.member_id, "a new member id");
    assert_eq!(
        sync(&mut c, "static", &back, &[]),
        (0, Bytes::from("for the follower"))
    );
    let gen = leader.generation_id;
    assert_eq!(
        heartbeat(&mut c, "static", &leader.member_id, leader_instance, gen),
        0,
        "still Stable"
    );
    // The old member id is fenced: a zombie cannot take the place back.
    assert_eq!(
        heartbeat(
            &mut c,
            "static",
            &follower.member_id,
            follower_instance,
            gen
        ),
        FENCED_INSTANCE_ID
    );
    assert_eq!(
        static_join(&mut c, "static", follower_instance, &follower.member_id).error_code,
        FENCED_INSTANCE_ID
    );
    // Leaving by instance id alone removes the member; the leader rebalances.
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("static")))
        .with_members(vec![leave_group_request::MemberIdentity::default()
            .with_group_instance_id(Some(StrBytes::from_static_str(
                follower_instance,
            )))]);
    let Ok(ResponseKind::LeaveGroup(l)) =
        c.call(ApiKey::LeaveGroup, 4, &RequestKind::LeaveGroup(leave))
    else {
        panic!()
    };
    assert_eq!((l.error_code, l.members[0].error_code), (0, 0), "{l:?}");
    assert_eq!(
        heartbeat(&mut c, "static", &leader.member_id, leader_instance, gen),
        27,
        "rebalancing"
    );
}

/// Kafka's rule for the leader's SyncGroup: its assignments replace everyone's, and a member
/// it leaves out gets nothing, never what it held in an earlier generation.
#[test]
fn a_member_the_leader_leaves_out_gets_an_empty_assignment() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp, "300");
    let kafka = server.kafka_addr();
    // The second joins a moment after the first: a rejoin of the leader then starts the
    // rebalance that the follower's rejoin takes part in (not a Stable shortcut).
    let join_both = |members: [(&'static str, String); 2]| -> Vec<JoinGroupResponse> {
        let threads: Vec<_> = members
            .into_iter()
            .enumerate()
            .map(|(i, (instance, member))| {
                let kafka = kafka.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(100 * i as u64));
                    static_join(&mut connect(&kafka), "left-out", instance, &member)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    };
    let sync_both = |leader: &JoinGroupResponse,
                     follower: &JoinGroupResponse,
                     assign: Vec<(String, &'static str)>| {
        let waiting = {
            let (kafka, follower) = (kafka.clone(), follower.clone());
            std::thread::spawn(move || sync(&mut connect(&kafka), "left-out", &follower, &[]))
        };
        let assign: Vec<(&str, &str)> = assign.iter().map(|(m, a)| (m.as_str(), *a)).collect();
        assert_eq!(sync(&mut connect(&kafka), "left-out", leader, &assign).0, 0);
        waiting.join().unwrap()
    };
    let split = |j: Vec<JoinGroupResponse>| match j[0].leader == j[0].member_id {
        true => (j[0].clone(), j[1].clone()),
        false => (j[1].clone(), j[0].clone()),
    };
    let first = join_both([("la", String::new()), ("lb", String::new())]);
    // Thread order: the first answer is instance "la"'s.
    let la = first[0].member_id.clone();
    let (leader, follower) = split(first);
    let both = vec![
        (leader.member_id.to_string(), "mine"),
        (follower.member_id.to_string(), "yours"),
    ];
    assert_eq!(
        sync_both(&leader, &follower, both),
        (0, Bytes::from("yours"))
    );
    // Both rejoin (a new generation); the leader now assigns only itself.
    let instance = |j: &JoinGroupResponse| if j.member_id == la { "la" } else { "lb" };
    // The leader rejoins first and starts a rebalance; only then does the follower rejoin,
    // so it takes part in the new generation (not the Stable shortcut).
    let leader_rejoin = {
        let (kafka, member) = (kafka.clone(), leader.member_id.to_string());
        let instance = instance(&leader);
        std::thread::spawn(move || static_join(&mut connect(&kafka), "left-out", instance, &member))
    };
    let mut c = connect(&kafka);
    let deadline = Instant::now() + Duration::from_secs(10);
    while group_state(&mut c, "left-out") != "PreparingRebalance" {
        assert!(
            Instant::now() < deadline,
            "the leader's rejoin started no rebalance"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let follower2 = static_join(&mut c, "left-out", instance(&follower), &follower.member_id);
    let leader2 = leader_rejoin.join().unwrap();
    assert!(leader2.generation_id > leader.generation_id);
    let only_leader = vec![(leader2.member_id.to_string(), "mine")];
    assert_eq!(
        sync_both(&leader2, &follower2, only_leader),
        (0, Bytes::new())
    );
}

/// Heartbeat, retried while the restarted coordinator loads its offsets partition (14).
fn heartbeat_after_restart(
    c: &mut BlockingClient,
    member: &JoinGroupResponse,
    instance: &str,
) -> i16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let code = heartbeat(c, "kept", &member.member_id, instance, member.generation_id);
        if code != 14 || Instant::now() >= deadline {
            return code;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Members, generation and assignments are stored as Kafka stores them (group-metadata
/// records in the offsets log): after a kill -9 and restart the members are still members of
/// the same generation, their heartbeats are accepted and a restarted member gets its
/// assignment back without a rebalance. A group emptied before a kill stays Empty.
#[test]
fn members_and_assignments_survive_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = server(&tmp, "300");
    let kafka = server.kafka_addr();
    let joins: Vec<_> = ["ka", "kb"]
        .into_iter()
        .map(|instance| {
            let kafka = kafka.clone();
            std::thread::spawn(move || static_join(&mut connect(&kafka), "kept", instance, ""))
        })
        .collect();
    let j: Vec<JoinGroupResponse> = joins.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(j.iter().all(|j| j.error_code == 0), "{j:?}");
    let (leader, follower, follower_instance, leader_instance) = match j[0].leader == j[0].member_id
    {
        true => (j[0].clone(), j[1].clone(), "kb", "ka"),
        false => (j[1].clone(), j[0].clone(), "ka", "kb"),
    };
    let assign = [
        (leader.member_id.as_str(), "leader's"),
        (follower.member_id.as_str(), "follower's"),
    ];
    let waiting = {
        let (kafka, follower) = (kafka.clone(), follower.clone());
        std::thread::spawn(move || sync(&mut connect(&kafka), "kept", &follower, &[]))
    };
    assert_eq!(sync(&mut connect(&kafka), "kept", &leader, &assign).0, 0);
    assert_eq!(waiting.join().unwrap(), (0, Bytes::from("follower's")));

    server.restart_after_kill();
    let mut c = connect(&kafka);
    for (member, instance) in [(&leader, leader_instance), (&follower, follower_instance)] {
        assert_eq!(
            heartbeat_after_restart(&mut c, member, instance),
            0,
            "a member of the stored generation; server log:\n{}",
            server.log_text()
        );
    }
    assert_eq!(group_state(&mut c, "kept"), "Stable");
    // The follower restarts too: it is back in the same generation with its assignment.
    let back = static_join(&mut c, "kept", follower_instance, "");
    assert_eq!(
        (back.error_code, back.generation_id),
        (0, follower.generation_id),
        "{back:?}"
    );
    assert_eq!(
        sync(&mut c, "kept", &back, &[]),
        (0, Bytes::from("follower's"))
    );

    // Both leave; the emptied group is stored too and is still Empty after another kill.
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("kept")))
        .with_members(
            [leader_instance, follower_instance]
                .into_iter()
                .map(|i| {
                    leave_group_request::MemberIdentity::default()
                        .with_group_instance_id(Some(StrBytes::from_static_str(i)))
                })
                .collect(),
        );
    let Ok(ResponseKind::LeaveGroup(l)) =
        c.call(ApiKey::LeaveGroup, 4, &RequestKind::LeaveGroup(leave))
    else {
        panic!()
    };
    assert_eq!(l.error_code, 0, "{l:?}");
    assert_eq!(group_state(&mut c, "kept"), "Empty");
    server.restart_after_kill();
    let mut c = connect(&kafka);
    assert_eq!(
        heartbeat_after_restart(&mut c, &leader, leader_instance),
        25,
        "UNKNOWN_MEMBER_ID: the members left before the kill; server log:\n{}",
        server.log_text()
    );
    assert_ne!(group_state(&mut c, "kept"), "Stable");
}

/// DescribeGroups state, retried while the coordinator loads its offsets partition.
fn state_when_loaded(c: &mut BlockingClient, group: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = group_state(c, group);
        if !state.is_empty() || Instant::now() >= deadline {
            return state;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (bounded) until `group` is Empty or forgotten (Dead), checking all along that
/// the server is still running; the state it ended in.
fn wait_until_emptied(server: &mut ServerProc, group: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        assert!(
            server.is_running(),
            "the server exited while {group}'s member expired; log:\n{}",
            server.log_text()
        );
        let state = state_when_loaded(&mut connect(&server.kafka_addr()), group);
        if state == "Empty" || state == "Dead" || Instant::now() >= deadline {
            return state;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A dynamic member that joins, syncs and goes silent, as librdkafka's consumer whose
/// connection closed (its test 0049).
fn join_and_go_silent(kafka: &str, group: &str) {
    let mut c = connect(kafka);
    let id = member_id(&mut c, group, 600);
    let j = join(&mut c, group, &id, 600);
    assert_eq!(j.error_code, 0, "{j:?}");
    assert_eq!(sync(&mut c, group, &j, &[(&id, "a")]).0, 0);
    assert_eq!(group_state(&mut c, group), "Stable");
}

/// Issue 39: a member whose session expired emptied its group; storing the emptied group
/// panicked the shard ("RefCell already mutably borrowed": the store task ran inside the
/// expiry's borrow of the group), and the stored member expired again at every restart, so
/// the node crash-looped. The expiry must leave the group Empty and the server serving,
/// before and after a kill -9 that leaves a member in the stored generation.
#[test]
fn an_expired_member_empties_its_group_without_crashing_even_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = server(&tmp, "0");
    let kafka = server.kafka_addr();
    join_and_go_silent(&kafka, "gone");
    // Emptied, and forgotten since it has no offsets (Dead), as Kafka does.
    let state = wait_until_emptied(&mut server, "gone", Duration::from_secs(15));
    assert_eq!(state, "Dead", "log:\n{}", server.log_text());

    // A data directory left with a member in the stored generation: the restarted
    // coordinator loads it, the member never returns, its session expires there.
    join_and_go_silent(&kafka, "left");
    server.restart_after_kill();
    let state = wait_until_emptied(&mut server, "left", Duration::from_secs(15));
    assert_eq!(state, "Dead", "log:\n{}", server.log_text());
    // The group's end was stored: it does not come back after another start.
    server.restart_after_kill();
    assert_eq!(
        state_when_loaded(&mut connect(&kafka), "left"),
        "Dead",
        "log:\n{}",
        server.log_text()
    );
    assert!(server.is_running(), "log:\n{}", server.log_text());
}
