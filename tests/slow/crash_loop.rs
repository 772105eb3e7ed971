//! Short version of scripts/crash-loop.sh: the real server binary, kill -9 at a random
//! moment while an acks=all producer records every acknowledgement, restart, verify.

use crate::common;

use std::time::Duration;

use common::client;
use common::server_proc::ServerProc;
use shardlog::tools::crash_check;

#[test]
fn kill_9_loses_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acks = tmp.path().join("acks");
    std::fs::write(&acks, "").unwrap();
    let mut server = ServerProc::start(&data, 2, &[]);
    let bootstrap = server.addr();
    let b = bootstrap.clone();
    client(move || async move {
        shardlog::client::Client::connect(&b)
            .await
            .expect("server up")
            .create_topic("crash", 3, vec![("segment.bytes".into(), "262144".into())])
            .await
            .unwrap();
    });
    let mut acknowledged = 0;
    for i in 0..3u64 {
        let (b, a) = (bootstrap.clone(), acks.clone());
        let producer = std::thread::spawn(move || {
            client(move || async move {
                crash_check::produce(&b, "crash", &a, 3, Duration::from_secs(60), i).await
            })
        });
        std::thread::sleep(Duration::from_millis(fastrand::u64(150..700)));
        // Waits until the killed process's listeners are gone: until then they accept and
        // reset connections, which the verifier would take for the new server.
        server.kill9();
        let produced = producer.join().unwrap().unwrap();
        server.respawn();
        let (b, a) = (bootstrap.clone(), acks.clone());
        let v = client(move || async move { crash_check::verify(&b, "crash", &a).await })
            .unwrap_or_else(|e| panic!("iteration {i}: {e}\nserver log:\n{}", server.log_text()));
        assert!(v.records_in_log >= v.acknowledged);
        assert!(v.acknowledged >= acknowledged + produced);
        acknowledged = v.acknowledged;
    }
    assert!(
        acknowledged > 0,
        "the producer never got an acknowledgement"
    );
    server.kill9();
}

/// acks=1 under a steady stream of large pipelined produces (chunk writes in flight while
/// group commits flush, frames in reused memory, staged parts written in place): kill -9 at
/// a random moment, three times; every acknowledged record is in the log after the
/// restart, at its offset, byte for byte.
#[test]
fn kill_9_loses_no_acknowledged_pipelined_acks_1_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let bootstrap = server.addr();
    let b = bootstrap.clone();
    client(move || async move {
        let mut c = shardlog::client::Client::connect(&b).await.unwrap();
        c.create_topic("stream", 1, vec![]).await.unwrap();
    });
    // offset -> CRC-32C of the acknowledged value there
    let mut acknowledged = std::collections::HashMap::new();
    for round in 0..3u64 {
        let b = bootstrap.clone();
        let producer = std::thread::spawn(move || {
            client(
                move || async move { pipelined_acks_1(&b, round, Duration::from_secs(30)).await },
            )
        });
        std::thread::sleep(Duration::from_millis(fastrand::u64(300..900)));
        server.kill9();
        let acked = producer.join().unwrap();
        assert!(!acked.is_empty(), "round {round}: nothing was acknowledged");
        acknowledged.extend(acked);
        server.respawn();
        let (b, expected) = (bootstrap.clone(), acknowledged.clone());
        let found = client(move || async move { count_matching(&b, &expected).await });
        assert_eq!(
            found,
            acknowledged.len(),
            "round {round}: every acknowledged record, byte for byte"
        );
    }
    server.kill9();
}

const PIPELINE: usize = 8;
const MAX_BATCHES: u64 = 300;

/// Produces 256-record batches (~256 KiB) with acks=1 and `PIPELINE` requests in flight
/// until the connection breaks, `MAX_BATCHES` were sent or `within` passes; returns the
/// acknowledged records as (offset, CRC-32C of the value).
async fn pipelined_acks_1(bootstrap: &str, round: u64, within: Duration) -> Vec<(i64, u32)> {
    use shardlog::protocol::{ApiKey, Request, ResponseBody, ACKS_LEADER};
    let mut c = shardlog::client::Client::connect(bootstrap).await.unwrap();
    let deadline = std::time::Instant::now() + within;
    let (mut sent, mut in_flight) = (0u64, std::collections::VecDeque::new());
    let mut acked = Vec::new();
    while std::time::Instant::now() < deadline {
        while in_flight.len() < PIPELINE && sent < MAX_BATCHES {
            let values: Vec<String> = (0..256)
                .map(|i| format!("{round}-{sent}-{i}-{}", "v".repeat(1000)))
                .collect();
            let crcs: Vec<u32> = values
                .iter()
                .map(|v| crc32c::crc32c(v.as_bytes()))
                .collect();
            let mut batch = shardlog::format::BatchBuilder::new(270_000);
            for v in &values {
                batch.push(shardlog::format::RecordSpec::new(None, Some(v.as_bytes())));
            }
            let req = Request::Produce {
                topic: "stream".into(),
                partition: 0,
                acks: ACKS_LEADER,
                records: bytes::Bytes::from(batch.build()),
            };
            if c.send(&req).await.is_err() {
                return acked;
            }
            in_flight.push_back(crcs);
            sent += 1;
        }
        if in_flight.is_empty() {
            return acked;
        }
        let Ok(reply) = c.recv(ApiKey::Produce).await else {
            return acked;
        };
        let crcs = in_flight.pop_front().expect("a request in flight");
        match reply.result {
            Ok(ResponseBody::Produce { base_offset, .. }) => acked.extend(
                crcs.into_iter()
                    .enumerate()
                    .map(|(i, crc)| (base_offset + i as i64, crc)),
            ),
            other => panic!("produce failed: {other:?}"),
        }
    }
    acked
}

/// Reads the partition front to back; counts the records whose value matches `expected`
/// at their offset (failing on a mismatch).
async fn count_matching(bootstrap: &str, expected: &std::collections::HashMap<i64, u32>) -> usize {
    let mut c = shardlog::client::Client::connect(bootstrap).await.unwrap();
    let mut matched = 0usize;
    common::visit_records(&mut c, "stream", 0, |offset, value| {
        if let Some(&crc) = expected.get(&offset) {
            let got = crc32c::crc32c(value.unwrap_or_default());
            assert_eq!(got, crc, "record {offset}");
            matched += 1;
        }
    })
    .await;
    matched
}
