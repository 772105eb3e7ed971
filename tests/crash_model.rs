//! Model-based crash tests on the simulated disk: random appends, flushes, syncs and rolls,
//! crashes at random writes or syncs (process kill, power loss, torn power loss), and
//! recoveries. After every recovery the log must equal a prefix of what was appended that
//! contains everything acknowledged: flushed records after a process kill, synced records
//! after a power loss. Seeded (SHARDLOG_CRASH_SEED, SHARDLOG_CRASH_CASES).

mod common;

use common::run;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::sim::{CrashKind, FaultPoint, SimStorage};
use shardlog::log::{OpenOptions, PartitionLog};
use shardlog::LogConfig;

async fn read_values(log: &mut PartitionLog) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let data = log.read(next, 64 * 1024).await.unwrap();
        for (start, h) in split_batches(&data).unwrap() {
            for r in RecordsSection::of(&data[start..start + h.size()], &h)
                .unwrap()
                .decode()
                .unwrap()
            {
                if r.offset >= next {
                    assert_eq!(r.offset as usize, out.len(), "offsets are contiguous");
                    out.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
                }
            }
            next = h.last_offset() + 1;
        }
    }
    out
}

fn one_case(seed: u64) {
    run(move |_| async move {
        let mut rng = fastrand::Rng::with_seed(seed);
        let sim = SimStorage::new();
        let dir = std::path::PathBuf::from("/sim/data/t-0");
        let config = LogConfig {
            segment_bytes: rng.u64(600..4000),
            index_interval_bytes: rng.u64(0..500),
            ..LogConfig::default()
        };
        // A small shared page cache: reads after every crash and reopen must never see pages
        // of the files as they were before.
        let cache = shardlog::io::PageCache::shared(rng.u64(0..8) * 16 * 1024);
        let open = |clean| {
            let storage = sim.as_storage();
            let cache = cache.clone();
            let dir = dir.clone();
            let config = config.clone();
            async move {
                PartitionLog::open_with(
                    storage,
                    &dir,
                    config,
                    OpenOptions {
                        clean_shutdown: clean,
                        cache: Some(cache),
                        ..OpenOptions::default()
                    },
                )
                .await
            }
        };
        let mut log = Some(open(false).await.unwrap());
        // Model: every record appended (accepted by append), and how many are acknowledged.
        let mut appended: Vec<String> = Vec::new();
        let mut flushed = 0usize;
        let mut synced = 0usize;
        let (mut crashes, mut lost_unacked) = (0, 0);
        for step in 0..300 {
            // Arm a crash some I/Os ahead, now and then.
            if rng.u8(0..25) == 0 {
                if rng.bool() {
                    sim.crash_at(FaultPoint::Write, rng.u64(1..6));
                } else {
                    sim.crash_at(FaultPoint::Sync, rng.u64(1..3));
                }
            }
            let l = log.as_mut().unwrap();
            let ok = match rng.u8(0..10) {
                0..=5 => {
                    let n = rng.usize(1..4);
                    let values: Vec<String> = (0..n)
                        .map(|i| format!("s{seed}-{step}-{i}-{}", "x".repeat(rng.usize(0..150))))
                        .collect();
                    let mut b = BatchBuilder::new(256);
                    for v in &values {
                        b.push(RecordSpec::new(None, Some(v.as_bytes())).timestamp(step as i64));
                    }
                    let r = l.append(&b.build()).await;
                    if r.is_ok() {
                        appended.extend(values);
                    }
                    r.is_ok()
                }
                6..=7 => {
                    let r = l.flush().await.is_ok();
                    if r {
                        flushed = appended.len();
                    }
                    r
                }
                8 => {
                    let r = l.sync().await.is_ok();
                    if r {
                        synced = appended.len();
                        flushed = appended.len();
                    }
                    r
                }
                _ => {
                    // Clean close, then a reopen that trusts it.
                    let closed = log.take().unwrap().close().await.is_ok();
                    let reopened = if closed { open(true).await.ok() } else { None };
                    match reopened {
                        Some(mut l) => {
                            flushed = appended.len();
                            synced = appended.len();
                            assert_eq!(
                                read_values(&mut l).await,
                                appended,
                                "seed {seed} step {step}: clean reopen"
                            );
                            log = Some(l);
                            true
                        }
                        None => false,
                    }
                }
            };
            if !ok || sim.has_crashed() {
                let kind = match rng.u8(0..3) {
                    0 => CrashKind::ProcessKill,
                    1 => CrashKind::PowerLoss,
                    _ => CrashKind::TornPowerLoss { seed: rng.u64(..) },
                };
                // The "process" dies: it must not write anything more.
                if let Some(l) = log.take() {
                    std::mem::forget(l);
                }
                sim.crash(kind);
                let mut l = open(false).await.unwrap();
                let got = read_values(&mut l).await;
                let must_have = match kind {
                    CrashKind::ProcessKill => flushed,
                    _ => synced,
                };
                assert!(
                    got.len() >= must_have,
                    "seed {seed} step {step} {kind:?}: lost acknowledged records ({} < {must_have})",
                    got.len()
                );
                assert!(got.len() <= appended.len(), "seed {seed}: invented records");
                assert_eq!(
                    got[..],
                    appended[..got.len()],
                    "seed {seed} step {step}: not a prefix"
                );
                crashes += 1;
                lost_unacked += appended.len() - got.len();
                appended.truncate(got.len());
                // Recovery fdatasyncs what it keeps.
                flushed = got.len();
                synced = got.len();
                log = Some(l);
            }
        }
        eprintln!(
            "seed {seed}: {crashes} crashes, {lost_unacked} unacknowledged records lost, {} kept",
            appended.len()
        );
        assert!(
            crashes > 0,
            "seed {seed}: the plan never crashed; the test would prove nothing"
        );
    });
}

#[test]
fn crashes_keep_a_prefix_with_everything_acknowledged() {
    let cases: u64 = std::env::var("SHARDLOG_CRASH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let first: u64 = std::env::var("SHARDLOG_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    for i in 0..cases {
        let seed = first.wrapping_add(i);
        eprintln!("crash model seed {seed}");
        one_case(seed);
    }
}
