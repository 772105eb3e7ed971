//! Integrity under admin races and process faults, through the real `shardlog serve` binary
//! on loopback: pipelined delete + create, concurrent admin churn with producers, a second
//! server on the same data directory or port, kill -9 in the middle of a large delete, and
//! the start-up window.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::server_proc::ServerProc;
use common::{client, read_records};
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{ApiKey, ErrorCode, Request, ResponseBody, ACKS_ALL};

fn batch(value: &str) -> Bytes {
    Bytes::from(
        BatchBuilder::new(128)
            .record(RecordSpec::new(None, Some(value.as_bytes())).timestamp(1_700_000_000_000))
            .build(),
    )
}

/// Every value in a partition, in offset order.
async fn values(c: &mut Client, topic: &str, p: i32) -> Vec<String> {
    read_records(c, topic, p)
        .await
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

#[test]
fn pipelined_delete_then_create_gives_an_empty_complete_topic_that_survives_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &[]);
    let addr = server.addr();
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("x", 4, vec![]).await.unwrap();
        for p in 0..4 {
            c.produce("x", p, ACKS_ALL, batch(&format!("old-{p}")))
                .await
                .unwrap();
        }
        // One connection, both requests written before either reply is read.
        let del = c
            .send(&Request::DeleteTopic { name: "x".into() })
            .await
            .unwrap();
        let create = c
            .send(&Request::CreateTopic {
                name: "x".into(),
                partitions: 4,
                configs: vec![],
            })
            .await
            .unwrap();
        for (cid, key) in [(del, ApiKey::DeleteTopic), (create, ApiKey::CreateTopic)] {
            let r = c.recv(key).await.unwrap();
            assert_eq!(r.correlation_id, cid);
            assert!(r.result.is_ok(), "{key:?}: {:?}", r.result);
        }
        for p in 0..4 {
            assert_eq!(
                values(&mut c, "x", p).await,
                Vec::<String>::new(),
                "partition {p}"
            );
            c.produce("x", p, ACKS_ALL, batch(&format!("new-{p}")))
                .await
                .unwrap();
        }
    });
    server.restart_after_kill();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        for p in 0..4 {
            assert_eq!(values(&mut c, "x", p).await, vec![format!("new-{p}")]);
        }
    });
}

/// Acknowledged (partition, value) pairs of the stable topic, and the error codes the
/// producers to the churned topic saw.
type ChurnOutcome = (Vec<(i32, String)>, BTreeSet<i16>);

#[test]
fn admin_churn_with_producers_panics_nothing_and_loses_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &[]);
    let addr = server.addr();
    let a = addr.clone();
    let churn_for = Duration::from_secs(30);
    let (acked, codes): ChurnOutcome = client(move || async move {
        let mut admin = Client::connect(&a).await.unwrap();
        admin.create_topic("stable", 4, vec![]).await.unwrap();
        let deadline = Instant::now() + churn_for;
        let mut tasks = Vec::new();
        for worker in 0..3 {
            let a = a.clone();
            tasks.push(glommio::spawn_local(async move {
                let mut c = Client::connect(&a).await.unwrap();
                let mut n = 0;
                while Instant::now() < deadline {
                    let r = if (n + worker) % 2 == 0 {
                        c.create_topic("churn", 3, vec![]).await
                    } else {
                        c.delete_topic("churn").await
                    };
                    if let Err(e) = r {
                        let ok = [ErrorCode::TopicAlreadyExists, ErrorCode::UnknownTopic];
                        assert!(e.code().is_some_and(|c| ok.contains(&c)), "admin: {e}");
                    }
                    n += 1;
                }
                (Vec::new(), BTreeSet::new())
            }));
        }
        for producer in 0..2 {
            let a = a.clone();
            tasks.push(glommio::spawn_local(async move {
                let mut c = Client::connect(&a).await.unwrap();
                let (mut acked, mut codes) = (Vec::new(), BTreeSet::new());
                let mut i = 0;
                while Instant::now() < deadline {
                    let p = i % 4;
                    let v = format!("{producer}-{i}");
                    c.produce("stable", p, ACKS_ALL, batch(&v)).await.unwrap();
                    acked.push((p, v));
                    if let Err(e) = c.produce("churn", p % 3, ACKS_ALL, batch("c")).await {
                        codes.insert(e.code().map_or(-1, |c| c as i16));
                    }
                    i += 1;
                }
                (acked, codes)
            }));
        }
        let mut all = (Vec::new(), BTreeSet::new());
        for t in tasks {
            let (a, c) = t.await;
            all.0.extend(a);
            all.1.extend(c);
        }
        all
    });
    assert!(server.is_running(), "server died:\n{}", server.log_text());
    assert!(
        !server.log_text().contains("panicked"),
        "{}",
        server.log_text()
    );
    // A produce racing a delete hears "unknown topic", never "unknown partition".
    let allowed = [ErrorCode::UnknownTopic as i16, ErrorCode::NotReady as i16];
    assert!(codes.iter().all(|c| allowed.contains(c)), "codes {codes:?}");
    assert!(
        acked.len() > 100,
        "only {} produces acknowledged",
        acked.len()
    );
    server.restart_after_kill();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let mut want: BTreeMap<i32, Vec<String>> = BTreeMap::new();
        for (p, v) in acked {
            want.entry(p).or_default().push(v);
        }
        for (p, vals) in want {
            let have: BTreeSet<String> = values(&mut c, "stable", p).await.into_iter().collect();
            for v in vals {
                assert!(
                    have.contains(&v),
                    "acknowledged {v} missing from stable-{p}"
                );
            }
        }
    });
}

#[test]
fn a_second_server_on_the_same_data_dir_or_port_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let first = ServerProc::start(&data, 1, &[]);
    let bin = env!("CARGO_BIN_EXE_shardlog");
    let other_port = first.port + 500;
    let same_dir = std::process::Command::new(bin)
        .args(["serve", "--shards", "1", "--data-dir"])
        .arg(&data)
        .args(["--listen", &format!("127.0.0.1:{other_port}")])
        .output()
        .unwrap();
    assert!(!same_dir.status.success());
    let err = String::from_utf8_lossy(&same_dir.stderr);
    assert!(
        err.contains("in use by another shardlog server") && err.contains(&first.pid().to_string()),
        "{err}"
    );
    let same_port = std::process::Command::new(bin)
        .args(["serve", "--shards", "1", "--data-dir"])
        .arg(tmp.path().join("other"))
        .args(["--listen", &first.addr()])
        .output()
        .unwrap();
    assert!(!same_port.status.success());
    let err = String::from_utf8_lossy(&same_port.stderr);
    assert!(err.contains("already served by another process"), "{err}");
}

#[test]
fn kill_9_in_the_middle_of_a_1000_partition_delete_never_revives_deleted_records() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &[]);
    let addr = server.addr();
    let a = addr.clone();
    let delete_took = client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("warmup", 1000, vec![]).await.unwrap();
        let started = Instant::now();
        c.delete_topic("warmup").await.unwrap();
        let took = started.elapsed();
        c.create_topic("big", 1000, vec![]).await.unwrap();
        for p in 0..1000 {
            c.produce("big", p, ACKS_ALL, batch("old")).await.unwrap();
        }
        c.send(&Request::DeleteTopic { name: "big".into() })
            .await
            .unwrap();
        took
    });
    std::thread::sleep(Duration::from_millis(fastrand::u64(5..60)));
    let started = Instant::now();
    server.restart_after_kill();
    let restart_took = started.elapsed();
    eprintln!(
        "figures: 1000-partition delete {} ms; restart after kill -9 during a delete {} ms",
        delete_took.as_millis(),
        restart_took.as_millis()
    );
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let md = c.metadata(Some(vec!["big".into()])).await.unwrap();
        let exists = md.topic("big").unwrap().error_code == ErrorCode::None;
        if exists {
            // The kill came before the deletion's commit point: the topic is whole.
            for p in 0..1000 {
                assert_eq!(values(&mut c, "big", p).await, vec!["old"], "big-{p}");
            }
            c.delete_topic("big").await.unwrap();
        }
        c.create_topic("big", 1000, vec![]).await.unwrap();
        for p in 0..1000 {
            assert_eq!(
                values(&mut c, "big", p).await,
                Vec::<String>::new(),
                "big-{p}"
            );
        }
    });
    let leftovers: Vec<String> = std::fs::read_dir(tmp.path().join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("big-") && n.contains('.'))
        .collect();
    assert!(
        leftovers.iter().all(|n| n.ends_with("-delete")),
        "{leftovers:?}"
    );
}

/// While a shard is still recovering its partitions, requests for them forwarded from a
/// ready shard get the retriable NotReady, never UnknownPartition.
#[test]
fn start_up_window_answers_not_ready_not_unknown_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &[]);
    let addr = server.addr();
    let a = addr.clone();
    // Fill one partition on each shard, so both have a long recovery after kill -9.
    let shard0_port = client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("slow", 2, vec![]).await.unwrap();
        let big = Bytes::from(
            BatchBuilder::new(1 << 20)
                .record(RecordSpec::new(None, Some(&vec![b'x'; 1000 << 10])).timestamp(1))
                .build(),
        );
        for _ in 0..200 {
            for p in 0..2 {
                c.produce("slow", p, 1, big.clone()).await.unwrap();
            }
        }
        c.metadata(None).await.unwrap().shard_port(0).unwrap()
    });
    server.restart_after_kill();
    let codes = client(move || async move {
        let mut codes = BTreeMap::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut c = loop {
            if let Ok(c) = Client::connect(&format!("127.0.0.1:{shard0_port}")).await {
                break c;
            }
            assert!(Instant::now() < deadline);
        };
        loop {
            let mut done = true;
            for p in 0..2 {
                let req = Request::Fetch {
                    topic: "slow".into(),
                    partition: p,
                    offset: 0,
                    max_bytes: 1,
                };
                let cid = c.send(&req).await.unwrap();
                let r = c.recv(ApiKey::Fetch).await.unwrap();
                assert_eq!(r.correlation_id, cid);
                let code = r.result.as_ref().err().map_or(ErrorCode::None, |e| e.0);
                *codes.entry(code as i16).or_insert(0) += 1;
                assert!(
                    [ErrorCode::None, ErrorCode::NotReady].contains(&code),
                    "{:?}",
                    r.result.err()
                );
                done &= matches!(r.result, Ok(ResponseBody::Fetch { .. }));
            }
            if done || Instant::now() > deadline {
                return codes;
            }
        }
    });
    eprintln!("start-up window: reply codes {codes:?}");
    assert!(codes.contains_key(&0));
}

/// SIGTERM with a client stuck half-way through a frame: the server still stops, within
/// its shutdown deadline, and cleanly.
#[test]
fn sigterm_stops_the_server_within_its_deadline_despite_a_stuck_client() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(
        &tmp.path().join("data"),
        2,
        &[
            ("shutdown.timeout.ms", "1000"),
            ("request.timeout.ms", "60000"),
        ],
    );
    let mut stuck = std::net::TcpStream::connect(server.addr()).unwrap();
    std::io::Write::write_all(&mut stuck, &1000i32.to_be_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.pid() as i32, libc::SIGTERM) };
    let status = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "still running");
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("stopped in {} ms: {status}", started.elapsed().as_millis());
    assert!(status.success(), "{status}: {}", server.log_text());
    assert!(tmp.path().join("data/.clean-shutdown").exists());
}

fn batch_at(value: &str, ts: i64) -> Bytes {
    Bytes::from(
        BatchBuilder::new(128)
            .record(RecordSpec::new(None, Some(value.as_bytes())).timestamp(ts))
            .build(),
    )
}

/// SIGTERM with hundreds of partitions, written and idle, their descriptors shared by a pool
/// far smaller than them: every partition closes (the closes' renames and directory syncs
/// batched into file-system syncs), the next start trusts them (no recovery), and every
/// record, offset and timestamp lookup is as it was; no temp file is left behind.
#[test]
fn sigterm_closes_hundreds_of_partitions_cleanly_and_the_restart_trusts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = [("max.open.files.per.shard", "20")];
    let mut server = ServerProc::start(&data, 2, &config);
    let addr = server.addr();
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("written", 150, vec![]).await.unwrap();
        c.create_topic("idle", 150, vec![]).await.unwrap();
        for round in 0..3i64 {
            for p in 0..150 {
                let ts = 1_700_000_000_000 + round * 1000 + p as i64;
                c.produce(
                    "written",
                    p,
                    ACKS_ALL,
                    batch_at(&format!("{p}/{round}"), ts),
                )
                .await
                .unwrap();
            }
        }
    });
    let started = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.pid() as i32, libc::SIGTERM) };
    let status = server.child.wait().unwrap();
    eprintln!(
        "300 partitions closed in {} ms",
        started.elapsed().as_millis()
    );
    assert!(status.success(), "{status}: {}", server.log_text());
    assert!(
        data.join(".clean-shutdown").exists(),
        "{}",
        server.log_text()
    );
    let first_run = server.log_text();
    server.respawn();
    let restart = server.log_text()[first_run.len()..].to_string();
    assert!(!restart.contains("no clean-shutdown marker"), "{restart}");
    assert!(!restart.contains("rebuilding index files"), "{restart}");
    let leftovers: Vec<_> = walk_files(&data)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        for p in 0..150 {
            let want: Vec<String> = (0..3).map(|round| format!("{p}/{round}")).collect();
            assert_eq!(values(&mut c, "written", p).await, want, "partition {p}");
            let ts = 1_700_000_000_000 + 1000 + p as i64;
            let (found, _) = c.fetch_at_time("written", p, ts, 1 << 20).await.unwrap();
            assert_eq!(found, Some((1, ts)), "partition {p}: lookup by time");
        }
        for p in (0..150).step_by(17) {
            assert!(values(&mut c, "idle", p).await.is_empty());
            c.produce("idle", p, ACKS_ALL, batch("after"))
                .await
                .unwrap();
            assert_eq!(values(&mut c, "idle", p).await, vec!["after"]);
        }
    });
}

/// Every file under `dir`, recursively.
fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => out.extend(walk_files(&path)),
            false => out.push(path),
        }
    }
    out
}
