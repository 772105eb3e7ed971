//! Property test: random batches (with out-of-order timestamps) under random
//! index.interval.bytes / segment.bytes / segment.index.bytes, with flushes and reopens mixed
//! in; timestamps at random or from a slow clock. Every offset must be readable, and every
//! timestamp lookup must equal a brute-force scan of the records that were appended.
//! Seeded: a failure prints its seed
//! (re-run with SHARDLOG_PROPTEST_SEED=<seed>; SHARDLOG_PROPTEST_CASES sets the case count).

use crate::common;

use common::run;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::{DmaStorage, PageCache};
use shardlog::log::{OpenOptions, PartitionLog, MAX_TIMESTAMP};
use shardlog::LogConfig;

#[derive(Clone, Copy)]
struct Rec {
    offset: i64,
    timestamp: i64,
}

fn brute_force(records: &[Rec], target: i64) -> Option<(i64, i64)> {
    records
        .iter()
        .find(|r| r.timestamp >= target)
        .map(|r| (r.offset, r.timestamp))
}

fn one_case(seed: u64) {
    run(move |dir| async move {
        let mut rng = fastrand::Rng::with_seed(seed);
        let config = LogConfig {
            index_interval_bytes: rng.u64(0..3000),
            segment_bytes: rng.u64(1200..8000),
            segment_index_bytes: if rng.bool() {
                rng.u64(24..120)
            } else {
                10 << 20
            },
            ..LogConfig::default()
        };
        let pdir = dir.join("prop-0");
        // Reads go through a page cache of random size (0 = none), as on a shard, and sealed
        // segments look their indexes up page by page.
        let cache = PageCache::shared(rng.u64(0..6) * 8192);
        let storage = DmaStorage::new(dir.clone());
        let open = || {
            let (storage, pdir, config, cache) =
                (storage.clone(), pdir.clone(), config.clone(), cache.clone());
            async move {
                let opts = OpenOptions {
                    clean_shutdown: false,
                    cache: Some(cache),
                    ..OpenOptions::default()
                };
                PartitionLog::open_with(storage, &pdir, config, opts)
                    .await
                    .unwrap()
            }
        };
        let mut log = open().await;
        let mut records: Vec<Rec> = Vec::new();
        let mut next = 0i64;
        let n_batches = rng.usize(1..120);
        // Or a slow clock: runs of batches share a millisecond, as under a fast producer,
        // which is where the time index's next entry bounds a search.
        let (slow_clock, mut clock) = (rng.bool(), 0i64);
        let jitter = if slow_clock { -2..3 } else { -300..300 };
        for _ in 0..n_batches {
            let n = rng.usize(1..6);
            let base_ts = if slow_clock {
                clock += rng.i64(0..3) / 2;
                clock
            } else {
                rng.i64(0..2_000)
            };
            let values: Vec<Vec<u8>> = (0..n).map(|_| vec![b'v'; rng.usize(0..200)]).collect();
            let mut b = BatchBuilder::new(256);
            let mut stamps = Vec::new();
            for v in &values {
                // Mostly increasing, sometimes going back in time.
                let ts = (base_ts + rng.i64(jitter.clone())).max(0);
                stamps.push(ts);
                b.push(RecordSpec::new(None, Some(v)).timestamp(ts));
            }
            let batch = b.build();
            let info = log.append(&batch).await.unwrap();
            assert_eq!(info.base_offset, next, "seed {seed}");
            for ts in stamps {
                records.push(Rec {
                    offset: next,
                    timestamp: ts,
                });
                next += 1;
            }
            match rng.u8(0..20) {
                0 => log.flush().await.unwrap(),
                1 => log.sync().await.unwrap(),
                2 => {
                    log.close().await.unwrap();
                    log = open().await;
                }
                _ => {}
            }
        }
        assert_eq!(log.log_end_offset(), next, "seed {seed}");

        // Every offset: the batch read first contains it, and the record is there.
        for r in &records {
            if rng.u8(0..8) == 0 {
                cache.borrow_mut().clear(); // a cold lookup now and then
            }
            let max_bytes = rng.usize(1..4096);
            let data = log.read(r.offset, max_bytes).await.unwrap().to_bytes();
            let parts = split_batches(&data).unwrap();
            let (_, h) = parts[0];
            assert!(
                h.base_offset <= r.offset && r.offset <= h.last_offset(),
                "seed {seed}: read({}) returned batch {}..={}",
                r.offset,
                h.base_offset,
                h.last_offset()
            );
            let section = RecordsSection::of(&data[..h.size()], &h).unwrap();
            let recs = section.decode().unwrap();
            let found = recs.iter().find(|x| x.offset == r.offset).unwrap();
            assert_eq!(found.timestamp, r.timestamp, "seed {seed}");
        }

        // Every interesting timestamp, plus random ones.
        let mut targets: Vec<i64> = records
            .iter()
            .flat_map(|r| [r.timestamp - 1, r.timestamp, r.timestamp + 1])
            .collect();
        targets.extend((0..50).map(|_| rng.i64(0..3_000)));
        for t in targets.into_iter().filter(|&t| t >= 0) {
            let got = log
                .find_offset_by_timestamp(t)
                .await
                .unwrap()
                .map(|x| (x.offset, x.timestamp));
            assert_eq!(got, brute_force(&records, t), "seed {seed}: target {t}");
        }
        let max = records.iter().map(|r| r.timestamp).max().unwrap();
        let got = log.find_offset_by_timestamp(MAX_TIMESTAMP).await.unwrap();
        assert_eq!(
            got.map(|x| (x.offset, x.timestamp)),
            brute_force(&records, max),
            "seed {seed}: max timestamp"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn random_logs_agree_with_brute_force() {
    for seed in common::seeds("SHARDLOG_PROPTEST", 40) {
        one_case(seed);
    }
}
