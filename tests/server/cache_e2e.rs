//! The read cache and DropCaches end to end: warm lookups cost no device read; after
//! DropCaches a lookup by offset in a sealed segment costs at most 2 device reads (one
//! index page, one log read) and by timestamp at most 3; the cache stays within its budget.

use crate::common;

use bytes::Bytes;
use common::*;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::ACKS_LEADER;

#[test]
fn warm_lookups_read_nothing_cold_lookups_read_little() {
    let tmp = tempfile::tempdir().unwrap();
    let budget = 8 << 20;
    let (server, port) = start_server(tmp.path(), 2, |c| c.cache_bytes = budget);
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        c.create_topic(
            "look",
            1,
            vec![("segment.bytes".into(), (4 << 20).to_string())],
        )
        .await
        .unwrap();
        // ~12 MiB of 16 KiB batches: three sealed segments and an active one.
        let value = vec![b'l'; 1000];
        let mut next = 0i64;
        for _ in 0..800 {
            let mut b = BatchBuilder::new(17_000);
            for _ in 0..16 {
                b.push(RecordSpec::new(None, Some(&value)).timestamp(1_000_000 + next));
                next += 1;
            }
            c.produce("look", 0, ACKS_LEADER, Bytes::from(b.build()))
                .await
                .unwrap();
        }
        let s = c.stats().await.unwrap();
        assert!(
            s.cache_bytes as u64 <= 2 * budget,
            "cache within budget: {s:?}"
        );
        assert_eq!(s.cache_budget_bytes as u64, 2 * budget);

        let mut rng = fastrand::Rng::with_seed(9);
        for _ in 0..20 {
            // An offset in a sealed segment.
            let o = rng.i64(0..next / 2);
            // Cold by offset.
            let before = c.drop_caches(false).await.unwrap().device_reads;
            let f = c.fetch("look", 0, o, 1).await.unwrap();
            assert!(!f.records.is_empty());
            let cold = c.stats().await.unwrap().device_reads - before;
            assert!(
                (1..=2).contains(&cold),
                "cold fetch at {o}: {cold} device reads"
            );
            // Warm: the same lookup again reads nothing.
            let before = c.stats().await.unwrap().device_reads;
            c.fetch("look", 0, o, 1).await.unwrap();
            assert_eq!(
                c.stats().await.unwrap().device_reads - before,
                0,
                "warm fetch at {o}"
            );
            // Cold by timestamp: time index page, offset index page, log.
            let before = c.drop_caches(false).await.unwrap().device_reads;
            let found = c
                .list_offsets("look", 0, 1_000_000 + o)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(found.0, o);
            let cold = c.stats().await.unwrap().device_reads - before;
            assert!(
                (1..=3).contains(&cold),
                "cold timestamp lookup at {o}: {cold} device reads"
            );
            // ...and the fetch that follows finds its pages cached.
            let before = c.stats().await.unwrap().device_reads;
            c.fetch("look", 0, found.0, 1).await.unwrap();
            assert_eq!(c.stats().await.unwrap().device_reads - before, 0);
        }
    });
    server.stop().unwrap();
}

/// A consumer reading a partition front to back (1 MiB fetches, caches dropped first) gets
/// read-ahead: chunks ahead of it are read into the page cache while it fetches, and every
/// record comes back once, in order. Random fetches afterwards issue no read-ahead, and no
/// read-ahead task outlives the reads.
#[test]
fn sequential_fetches_read_ahead_random_fetches_do_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 1, |c| c.cache_bytes = 64 << 20);
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        let segment = ("segment.bytes".to_string(), (16 << 20).to_string());
        c.create_topic("seq", 1, vec![segment]).await.unwrap();
        // ~40 MiB of 64 KiB batches: two sealed segments and an active one.
        let value = vec![b's'; 1000];
        let mut records = 0i64;
        for _ in 0..640 {
            let mut b = BatchBuilder::new(66_000);
            for _ in 0..64 {
                b.push(RecordSpec::new(None, Some(&value)));
                records += 1;
            }
            c.produce("seq", 0, ACKS_LEADER, Bytes::from(b.build()))
                .await
                .unwrap();
        }
        c.drop_caches(false).await.unwrap();
        let read_ahead =
            |m: &shardlog::metrics::MetricsReport| m.value("read_ahead_bytes").unwrap();
        let before = c.metrics().await.unwrap();
        let (consumed, bytes) = consume_all(&mut c, "seq", records).await;
        assert_eq!(consumed, records, "every record once, in order");
        let after = c.metrics().await.unwrap();
        let ahead = read_ahead(&after) - read_ahead(&before);
        assert!(
            ahead >= bytes / 2,
            "read-ahead covered {ahead} of the {bytes} bytes consumed"
        );

        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..30 {
            c.drop_caches(false).await.unwrap();
            let o = rng.i64(0..records);
            assert!(!c
                .fetch("seq", 0, o, 1 << 20)
                .await
                .unwrap()
                .records
                .is_empty());
        }
        let random = read_ahead(&c.metrics().await.unwrap()) - read_ahead(&after);
        assert_eq!(random, 0, "random fetches read nothing ahead");
        assert_tasks_settle(&mut c, before.value("tasks").unwrap()).await;
    });
    server.stop().unwrap();
}

/// Fetches `topic`/0 from 0 to `end` in 1 MiB fetches, checking each starts where the
/// last one stopped; returns the records and bytes read.
async fn consume_all(c: &mut Client, topic: &str, end: i64) -> (i64, u64) {
    let (mut next, mut bytes) = (0i64, 0u64);
    while next < end {
        let f = c.fetch(topic, 0, next, 1 << 20).await.unwrap();
        let batches = shardlog::format::batch::split_batches(&f.records).unwrap();
        assert_eq!(
            batches[0].1.base_offset, next,
            "a fetch starts where the last stopped"
        );
        next = batches.last().unwrap().1.last_offset() + 1;
        bytes += f.records.len() as u64;
    }
    (next, bytes)
}

/// The shard's live tasks come back to `baseline` (read-ahead reads all ended).
async fn assert_tasks_settle(c: &mut Client, baseline: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let tasks = c.metrics().await.unwrap().value("tasks").unwrap();
        if tasks <= baseline {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{tasks} tasks alive, {baseline} before the reads"
        );
        glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
    }
}
