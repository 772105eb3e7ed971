//! Committed offsets no client can lose or forge, through the real `shardlog serve` binary:
//! - every client change to `__consumer_offsets` (delete, create, produce, delete records,
//!   reconfigure) is refused on both protocols, and the commits survive a restart intact;
//! - commit metadata over offset.metadata.max.bytes is refused and changes nothing;
//! - a coordinator answers only from a loaded state: right after a kill -9 and restart,
//!   with commits in flight when it died, every group request is either answered from the
//!   whole offsets log or refused with the retriable NotReady, never answered "no commit".

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::kafka_clients;
use common::server_proc::ServerProc;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{ErrorCode, ACKS_ALL};

const OFFSETS: &str = "__consumer_offsets";

fn batch(key: &[u8], value: &[u8]) -> Bytes {
    let mut b = BatchBuilder::new(4096);
    b.push(RecordSpec::new(Some(key), Some(value)));
    Bytes::from(b.build())
}

fn refused<T: std::fmt::Debug>(what: &str, r: shardlog::client::ClientResult<T>) {
    match r {
        Err(e) if e.code() == Some(ErrorCode::InternalTopic) => {}
        other => panic!("{what}: expected InternalTopic, got {other:?}"),
    }
}

/// The group's committed offset of orders-0, or None.
async fn committed(c: &mut Client, group: &str) -> shardlog::client::ClientResult<Option<i64>> {
    let offsets = c.offset_fetch(group, Some(vec!["orders".into()])).await?;
    Ok(offsets
        .into_iter()
        .find(|(t, p, o, _)| t == "orders" && *p == 0 && *o >= 0)
        .map(|(_, _, o, _)| o))
}

#[test]
fn internal_topics_refuse_every_client_change_on_both_protocols() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let addr = server.addr();
    common::client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        // Pre-creating it (with other settings) before the server does.
        refused("pre-create", c.create_topic(OFFSETS, 1, vec![]).await);
        c.create_topic("orders", 2, vec![]).await.unwrap();
        let codes = c
            .offset_commit("g1", vec![("orders".into(), 0, 50, String::new())])
            .await
            .unwrap();
        assert_eq!(codes[0].2, ErrorCode::None);
        refused("delete", c.delete_topic(OFFSETS).await);
        refused("create", c.create_topic(OFFSETS, 1, vec![]).await);
        let forged = batch(b"forged", b"offset 7");
        refused("produce", c.produce(OFFSETS, 0, ACKS_ALL, forged).await);
        refused("delete records", c.delete_records(OFFSETS, 0, -1).await);
        let delete_policy = vec![
            ("cleanup.policy".into(), "delete".into()),
            ("retention.ms".into(), "1".into()),
        ];
        refused(
            "reconfigure",
            c.alter_configs(OFFSETS, delete_policy, vec![]).await,
        );
        // Reading it is allowed.
        c.fetch(OFFSETS, 0, 0, 1 << 20).await.unwrap();
        // Commit metadata is bounded (offset.metadata.max.bytes, 4096): nothing is held.
        let huge = vec![("orders".into(), 0, 7, "m".repeat(30_000))];
        let codes = c.offset_commit("g1", huge).await.unwrap();
        assert_eq!(codes[0].2, ErrorCode::InvalidRequest);
        let at_limit = vec![("orders".into(), 1, 9, "m".repeat(4096))];
        assert_eq!(
            c.offset_commit("g1", at_limit).await.unwrap()[0].2,
            ErrorCode::None
        );
        assert_eq!(committed(&mut c, "g1").await.unwrap(), Some(50));
    });
    let mut py = kafka_clients::script("internal.py", &[&server.kafka_addr()]);
    let out = kafka_clients::run_bounded(&mut py, Duration::from_secs(120));
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("OK"),
        "internal.py: {}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    server.restart_after_kill();
    let addr = server.addr();
    let after = common::client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match committed(&mut c, "g1").await {
                Err(e) if e.code() == Some(ErrorCode::NotReady) && Instant::now() < deadline => {
                    glommio::timer::sleep(Duration::from_millis(20)).await
                }
                other => return other.unwrap(),
            }
        }
    });
    assert_eq!(after, Some(50), "g1's commit after the restart");
}

const COMMITTERS: usize = 2;
const GROUPS_EACH: i64 = 5;

/// Commits increasing offsets for its own groups until `stop`; records the last
/// acknowledged offset per group and the highest sent.
fn commit_until_stopped(
    id: usize,
    addr: String,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<HashMap<String, (i64, i64)>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        common::client(move || async move {
            let Ok(mut c) = Client::connect(&addr).await else {
                return;
            };
            for n in 1.. {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let group = format!("group-{id}-{}", n % GROUPS_EACH);
                acked.lock().unwrap().entry(group.clone()).or_default().1 = n;
                let offsets = vec![("orders".into(), 0, n, String::new())];
                match c.offset_commit(&group, offsets).await {
                    Ok(codes) if codes[0].2 == ErrorCode::None => {
                        acked.lock().unwrap().get_mut(&group).unwrap().0 = n;
                    }
                    // The server died under it.
                    _ => return,
                }
            }
        })
    })
}

#[test]
fn commits_survive_kill9_and_groups_are_never_read_empty_while_loading() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &[]);
    let addr = server.addr();
    common::client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        c.create_topic("orders", 4, vec![]).await.unwrap();
        // One shard owns a fat active segment: after a kill -9 its recovery scan keeps it
        // opening partitions while the other shard already serves (the window of the race).
        c.create_topic("bulk", 1, vec![]).await.unwrap();
        let value = vec![b'x'; 1 << 16];
        for _ in 0..150 {
            let mut b = BatchBuilder::new(1 << 21);
            for _ in 0..16 {
                b.push(RecordSpec::new(None, Some(&value)));
            }
            let batch = Bytes::from(b.build());
            c.produce("bulk", 0, shardlog::protocol::ACKS_LEADER, batch)
                .await
                .unwrap();
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(HashMap::new()));
    let committers: Vec<_> = (0..COMMITTERS)
        .map(|id| commit_until_stopped(id, server.addr(), stop.clone(), acked.clone()))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    // kill -9 with commits in flight.
    server.kill9();
    stop.store(true, Ordering::Relaxed);
    committers.into_iter().for_each(|t| t.join().unwrap());
    let acked = acked.lock().unwrap().clone();
    let groups = COMMITTERS * GROUPS_EACH as usize;
    assert_eq!(acked.len(), groups, "every group committed: {acked:?}");
    // The client is running before the server starts again and asks the moment it can
    // connect (the first shard listening), as clients do after a restart: every answer is
    // whole or NotReady.
    let addr = server.addr();
    let restart = std::thread::spawn(move || {
        server.respawn();
        server
    });
    let not_ready = common::client(move || async move {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut c = loop {
            match Client::connect_with_timeout(&addr, Duration::from_secs(1)).await {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    glommio::timer::sleep(Duration::from_millis(2)).await;
                }
                Err(e) => panic!("the server did not come back: {e}"),
            }
        };
        let mut pending: Vec<String> = acked.keys().cloned().collect();
        let mut not_ready = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pending.is_empty() {
            assert!(Instant::now() < deadline, "still loading: {pending:?}");
            let group = pending.pop().unwrap();
            let (acked, sent) = acked[&group];
            match committed(&mut c, &group).await {
                Ok(Some(o)) => assert!(
                    (acked..=sent).contains(&o),
                    "{group}: committed {o}, acknowledged {acked}, last sent {sent}"
                ),
                Ok(None) => panic!("{group}: its acknowledged commit {acked} reads as absent"),
                Err(e) if e.code() == Some(ErrorCode::NotReady) => {
                    not_ready += 1;
                    pending.insert(0, group);
                }
                Err(e) => panic!("{group}: {e}"),
            }
        }
        not_ready
    });
    let server = restart.join().unwrap();
    // shardlog's client retries NotReady itself; the server counts the refusals it sent.
    let refused: u64 = (server.metrics().values.iter())
        .filter(|(k, _)| k.ends_with(".errors") && k.contains("Offset"))
        .map(|(_, v)| v)
        .sum();
    eprintln!("answers NotReady while loading: {not_ready} seen, {refused} sent");
    for line in server.log_text().lines() {
        if line.contains("partitions open") {
            eprintln!("{line}");
        }
    }
}

/// The offsets topic's partition count is fixed once it exists: a restart with another
/// `offsets.topic.num.partitions` is refused with a clear error, never a silent re-hash of
/// every group to other partitions (away from its commits).
#[test]
fn a_changed_offsets_partition_count_refuses_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut server = ServerProc::start(&data, 2, &[("offsets.topic.num.partitions", "3")]);
    let addr = server.addr();
    common::client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        c.create_topic("orders", 1, vec![]).await.unwrap();
        let offsets = vec![("orders".into(), 0, 5, String::new())];
        assert_eq!(
            c.offset_commit("g", offsets).await.unwrap()[0].2,
            ErrorCode::None
        );
    });
    server.kill9();
    let conf = tmp.path().join("changed.properties");
    std::fs::write(&conf, "shards=2\noffsets.topic.num.partitions=5\n").unwrap();
    let port = common::server_proc::free_port().to_string();
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"));
    serve
        .args(["serve", "--kafka-listen", "off", "--data-dir"])
        .arg(&data)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--config"])
        .arg(&conf);
    let out = kafka_clients::run_bounded(&mut serve, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started anyway: {stderr}");
    assert!(
        stderr.contains("__consumer_offsets has 3 partitions")
            && stderr.contains("offsets.topic.num.partitions=3"),
        "{stderr}"
    );
}
