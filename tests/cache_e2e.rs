//! The read cache and DropCaches end to end: warm lookups cost no device read; after
//! DropCaches a lookup by offset in a sealed segment costs at most 2 device reads (one
//! index page, one log read) and by timestamp at most 3; the cache stays within its budget.

mod common;

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
