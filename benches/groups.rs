//! Consumer-group figures on a real 2-shard server: commit latency (acks=all on the offsets
//! log, one committer and 16 at once), the time a group of 2 and of 10 members takes to form
//! and to rebalance after one leaves (members speaking Kafka's protocol, one thread each),
//! and the coordinators' load time for N groups after a restart.
//! `cargo bench --bench groups [-- --quick]`; SHARDLOG_BENCH_DIR sets the data directory.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::client::Client;
use shardlog::kafka::blocking_client::BlockingClient;
use shardlog::server::{self, ServerConfig};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let groups = if quick { 5_000 } else { 100_000 };
    let base = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    let dir = base.join("groups");
    let _ = std::fs::remove_dir_all(&dir);
    let port = 23_000 + (std::process::id() % 1000) as u16 * 3;
    let config = ServerConfig {
        data_dir: dir.clone(),
        listen: format!("127.0.0.1:{port}").parse().unwrap(),
        kafka_listen: Some(format!("127.0.0.1:{}", port - 2_000).parse().unwrap()),
        shards: 2.min(std::thread::available_parallelism().unwrap().get()),
        // Every member of a forming group joins within this (Kafka's default is 3000).
        group_initial_rebalance_delay_ms: 300,
        group_min_session_timeout_ms: 1_000,
        ..Default::default()
    };
    let native = config.listen.to_string();
    let kafka = config.kafka_listen.unwrap().to_string();
    let server = server::start(config.clone()).expect("server");
    on_client(&native, |mut c| async move {
        c.create_topic("t", 16, vec![]).await.unwrap();
    });
    for committers in [1usize, 16] {
        let h = commit_latency(&native, committers, if quick { 200 } else { 1_000 });
        println!(
            "commit latency, {committers} committer(s): p50 {:.2} ms, p99 {:.2} ms ({} commits)",
            h.value_at_quantile(0.5) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0,
            h.len()
        );
    }
    for members in [2usize, 10] {
        let (form, rebalance) = rebalance_times(&kafka, members);
        println!(
            "{members} members: group formed in {:.1} ms (300 ms initial delay included), rebalanced after a leave in {:.1} ms",
            form.as_secs_f64() * 1e3,
            rebalance.as_secs_f64() * 1e3
        );
    }
    let started = Instant::now();
    commit_many(&native, groups);
    println!(
        "{groups} groups committed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    server.stop().expect("clean stop");
    let server = server::start(config).expect("restart");
    let started = Instant::now();
    let listed = on_client(&native, |mut c| async move {
        c.list_groups().await.unwrap().len()
    });
    println!(
        "after a restart, the coordinators loaded {listed} groups in {:.1} ms (first ListGroups)",
        started.elapsed().as_secs_f64() * 1e3
    );
    server.stop().expect("clean stop");
    let _ = std::fs::remove_dir_all(&dir);
}

fn on_client<T: Send + 'static, F, Fut>(addr: &str, f: F) -> T
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
{
    let addr = addr.to_string();
    glommio::LocalExecutorBuilder::default()
        .spawn(move || async move { f(Client::connect(&addr).await.unwrap()).await })
        .unwrap()
        .join()
        .unwrap()
}

fn commit_latency(addr: &str, committers: usize, each: usize) -> Histogram<u64> {
    let target = addr.to_string();
    on_client(addr, move |_| async move {
        let hist = std::rc::Rc::new(std::cell::RefCell::new(
            Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap(),
        ));
        let tasks: Vec<_> = (0..committers)
            .map(|i| {
                let hist = hist.clone();
                let addr = target.clone();
                glommio::spawn_local(async move {
                    let mut c = Client::connect(&addr).await.unwrap();
                    for n in 0..each {
                        let offsets =
                            vec![("t".to_string(), (i % 16) as i32, n as i64, String::new())];
                        let t = Instant::now();
                        c.offset_commit(&format!("lat-{committers}-{i}"), offsets)
                            .await
                            .unwrap();
                        hist.borrow_mut()
                            .record(t.elapsed().as_micros().max(1) as u64)
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await;
        }
        let h = hist.borrow().clone();
        h
    })
}

fn commit_many(addr: &str, groups: usize) {
    let addr = addr.to_string();
    on_client(&addr.clone(), move |_| async move {
        let per = groups.div_ceil(64);
        let tasks: Vec<_> = (0..64)
            .map(|w| {
                let addr = addr.clone();
                glommio::spawn_local(async move {
                    let mut c = Client::connect(&addr).await.unwrap();
                    for g in (w * per)..((w + 1) * per).min(groups) {
                        let offsets =
                            vec![("t".to_string(), (g % 16) as i32, g as i64, String::new())];
                        c.offset_commit(&format!("group-{g}"), offsets)
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await;
        }
    });
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One member's join + sync, rejoining while the group rebalances (as clients do on
/// REBALANCE_IN_PROGRESS); returns its member id.
fn join_and_sync(c: &mut BlockingClient, group: &str, member_id: &str) -> String {
    let mut id = member_id.to_string();
    for _ in 0..100 {
        match try_join_and_sync(c, group, &id) {
            Ok(done) => return done,
            Err(again) => id = again,
        }
    }
    panic!("{group}: no stable generation after 100 rounds")
}

/// JoinGroup v3 (no member-id round trip) then SyncGroup; `Err(member id)` to rejoin.
fn try_join_and_sync(
    c: &mut BlockingClient,
    group: &str,
    member_id: &str,
) -> Result<String, String> {
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(s(member_id))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
        )
        .with_name(s("range"))
        .with_metadata(Bytes::new())]);
    let ResponseKind::JoinGroup(j) = c
        .call(ApiKey::JoinGroup, 3, &RequestKind::JoinGroup(join))
        .unwrap()
    else {
        panic!("join")
    };
    match j.error_code {
        0 => {}
        // Removed from the group (it rebalanced without us): join as a new member.
        25 => return Err(String::new()),
        other => panic!("JoinGroup error {other}"),
    }
    let assignments = j
        .members
        .iter()
        .map(|m| {
            sync_group_request::SyncGroupRequestAssignment::default()
                .with_member_id(m.member_id.clone())
                .with_assignment(Bytes::from_static(b"x"))
        })
        .collect();
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id(j.generation_id)
        .with_member_id(j.member_id.clone())
        .with_assignments(assignments);
    let ResponseKind::SyncGroup(r) = c
        .call(ApiKey::SyncGroup, 3, &RequestKind::SyncGroup(sync))
        .unwrap()
    else {
        panic!("sync")
    };
    match r.error_code {
        0 => Ok(j.member_id.to_string()),
        27 => Err(j.member_id.to_string()),
        other => panic!("SyncGroup error {other}"),
    }
}

/// (time for `n` members to form a group, time to rebalance after one leaves).
fn rebalance_times(kafka: &str, n: usize) -> (Duration, Duration) {
    let group = format!("rebalance-{n}");
    let started = Instant::now();
    let ids: Vec<(BlockingClient, String)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let group = group.clone();
                sc.spawn(move || {
                    let mut c = BlockingClient::connect(kafka).unwrap();
                    let id = join_and_sync(&mut c, &group, "");
                    (c, id)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let formed = started.elapsed();
    let mut members = ids;
    let (mut leaver, leaver_id) = members.pop().unwrap();
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(s(&group)))
        .with_member_id(s(&leaver_id));
    let started = Instant::now();
    leaver
        .call(ApiKey::LeaveGroup, 1, &RequestKind::LeaveGroup(leave))
        .unwrap();
    std::thread::scope(|sc| {
        for (c, id) in members.iter_mut() {
            let group = group.clone();
            sc.spawn(move || join_and_sync(c, &group, id));
        }
    });
    (formed, started.elapsed())
}
