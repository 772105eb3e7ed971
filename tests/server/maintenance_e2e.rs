//! Log maintenance keeps its delays while the shard is busy, through the real binary: after
//! a compaction pass on a topic with file.delete.delay.ms=1000, its `.deleted` files are gone
//! within a few seconds even while another compacted topic's long cleaning (throttled by
//! log.cleaner.io.max.bytes.per.second) runs and other partitions take a steady stream of
//! acks=all produces. They used to linger 15 s and more: one loop walked the partitions in
//! turn, and a cleaning pass or a step queued behind a busy partition's produces held up
//! every other partition's file removal.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::server_proc::ServerProc;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::ACKS_ALL;

fn keyed(n: usize, value_len: usize) -> Bytes {
    let mut b = BatchBuilder::new(n * (value_len + 64));
    let value = vec![b'v'; value_len];
    let keys: Vec<String> = (0..n).map(|i| format!("key-{}", i % 10)).collect();
    for k in &keys {
        b.push(RecordSpec::new(Some(k.as_bytes()), Some(&value)));
    }
    Bytes::from(b.build())
}

/// Files of the topic's partition directories that wait for removal.
fn pending_files(data: &std::path::Path, topic: &str) -> Vec<String> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(data).unwrap().flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&format!("{topic}-")) || !dir.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let f = f.file_name().to_string_lossy().into_owned();
            if f.ends_with(".deleted") || f.ends_with(".cleaned") {
                out.push(format!("{name}/{f}"));
            }
        }
    }
    out
}

#[test]
fn deleted_files_go_on_time_while_other_partitions_are_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = ServerProc::start(
        &data,
        2,
        &[
            ("log.retention.check.interval.ms", "1000"),
            ("log.cleaner.backoff.ms", "1000"),
            // The big topic's cleaning takes several seconds.
            ("log.cleaner.io.max.bytes.per.second", "1048576"),
        ],
    );
    let addr = server.addr();
    common::client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let compact = vec![
            ("cleanup.policy".into(), "compact".into()),
            ("file.delete.delay.ms".into(), "1000".into()),
            ("segment.bytes".into(), "65536".into()),
        ];
        c.create_topic("table", 2, compact.clone()).await.unwrap();
        c.create_topic("busy", 8, vec![]).await.unwrap();
        let mut big = compact;
        big[2].1 = (1 << 20).to_string();
        c.create_topic("big", 2, big).await.unwrap();
        for p in 0..2 {
            for _ in 0..60 {
                c.produce("big", p, ACKS_ALL, keyed(50, 2000))
                    .await
                    .unwrap();
            }
        }
        for p in 0..2 {
            for _ in 0..40 {
                c.produce("table", p, ACKS_ALL, keyed(10, 1000))
                    .await
                    .unwrap();
            }
        }
    });
    // Steady acks=all produces to every partition of the busy topic until stopped.
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..4)
        .map(|i| {
            let (addr, stop) = (server.addr(), stop.clone());
            std::thread::spawn(move || {
                common::client(move || async move {
                    let mut c = Client::connect(&addr).await.unwrap();
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let p = i * 2 + n % 2;
                        let _ = c.produce("busy", p, ACKS_ALL, keyed(50, 200)).await;
                        n += 1;
                    }
                })
            })
        })
        .collect();
    // The background cleaner starts on the big topic (due at the first backoff).
    std::thread::sleep(Duration::from_secs(2));
    let addr = server.addr();
    common::client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        c.run_log_maintenance("table").await.unwrap();
    });
    let cleaned_at = Instant::now();
    let had = pending_files(&data, "table");
    let deadline = cleaned_at + Duration::from_secs(30);
    while !pending_files(&data, "table").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = cleaned_at.elapsed();
    stop.store(true, Ordering::Relaxed);
    producers.into_iter().for_each(|p| p.join().unwrap());
    eprintln!(
        "{} files pending after the pass, gone after {took:?}",
        had.len()
    );
    assert!(
        !had.is_empty(),
        "the pass left no .deleted files to wait for"
    );
    assert!(
        pending_files(&data, "table").is_empty(),
        "still pending after {took:?}: {:?}",
        pending_files(&data, "table")
    );
    // file.delete.delay.ms (1 s) + one maintenance tick (1 s) + slack for a busy machine.
    assert!(took < Duration::from_secs(8), "files lingered {took:?}");
}
