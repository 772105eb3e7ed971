//! Model-based crash tests on the adversarial simulated disk (writes complete out of order):
//! random appends, flushes, syncs (the partition's own, or a durability mark made durable by
//! a file-system sync) and rolls, crashes at random writes, syncs or metadata
//! operations (process kill, power loss, torn and damaging power loss), and recoveries. After
//! every recovery the log must equal a prefix of what was appended that contains everything
//! acknowledged: flushed records after a process kill, synced records after a power loss
//! (a damaging power loss may lose acknowledged records, never serve wrong ones).
//! Two profiles: small segments and records, and megabyte records in multi-megabyte
//! segments, so the appender's 1 MiB chunks with several writes in flight are crashed too.
//! Seeded (SHARDLOG_CRASH_SEED, SHARDLOG_CRASH_CASES).

use crate::common;

use common::run;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shardlog::io::sim::{CrashKind, FaultPoint, SimStorage};
use shardlog::io::Storage;
use shardlog::log::{OpenOptions, PartitionLog};
use shardlog::LogConfig;

async fn read_values(log: &mut PartitionLog) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let data = log.read(next, 64 * 1024).await.unwrap().to_bytes();
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

/// Sizes a case draws from.
#[derive(Clone)]
struct Profile {
    segment_bytes: Range<u64>,
    value_bytes: Range<usize>,
    steps: usize,
    /// Whether appends fill chunks, so some crashes must find writes in flight.
    fills_chunks: bool,
}

const SMALL: Profile = Profile {
    segment_bytes: 600..4000,
    value_bytes: 0..150,
    steps: 300,
    fills_chunks: false,
};

/// Records of up to 384 KiB in 2-8 MiB segments: each append fills staging chunks, and
/// up to four 1 MiB writes are in flight when a crash comes.
const LARGE: Profile = Profile {
    segment_bytes: (2 << 20)..(8 << 20),
    value_bytes: 0..(384 << 10),
    steps: 120,
    fills_chunks: true,
};

fn crash_kind(rng: &mut fastrand::Rng) -> CrashKind {
    match rng.u8(0..4) {
        0 => CrashKind::ProcessKill,
        1 => CrashKind::PowerLoss,
        2 => CrashKind::TornPowerLoss { seed: rng.u64(..) },
        _ => CrashKind::DamagingPowerLoss { seed: rng.u64(..) },
    }
}

fn arm_crash(sim: &SimStorage, rng: &mut fastrand::Rng) {
    match rng.u8(0..4) {
        0 | 1 => sim.crash_at(FaultPoint::Write, rng.u64(1..6)),
        2 => sim.crash_at(FaultPoint::Sync, rng.u64(1..3)),
        _ => sim.crash_at(FaultPoint::Meta, rng.u64(1..4)),
    }
}

/// Runs one seeded history; returns how many of its crashes came with writes in flight.
fn one_case(seed: u64, profile: Profile) -> usize {
    let mid_write_crashes = Arc::new(AtomicUsize::new(0));
    let counted = mid_write_crashes.clone();
    run(move |_| async move {
        let mut rng = fastrand::Rng::with_seed(seed);
        let sim = SimStorage::adversarial(seed);
        let dir = std::path::PathBuf::from("/sim/data/t-0");
        let config = LogConfig {
            segment_bytes: rng.u64(profile.segment_bytes.clone()),
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
        // A durability mark waiting for a file-system sync (an idle partition's shared sync).
        let mut marked = None;
        let (mut crashes, mut lost_unacked, mut mid_write) = (0, 0, 0);
        for step in 0..profile.steps {
            // Arm a crash some I/Os ahead, now and then.
            if rng.u8(0..25) == 0 {
                arm_crash(&sim, &mut rng);
            }
            // Now and then the process dies right after a step, chunk writes still in flight.
            let killed = rng.u8(0..15) == 0;
            let l = log.as_mut().unwrap();
            let ok = match rng.u8(0..11) {
                0..=5 => {
                    let n = rng.usize(1..4);
                    let values: Vec<String> = (0..n)
                        .map(|i| {
                            format!(
                                "s{seed}-{step}-{i}-{}",
                                "x".repeat(rng.usize(profile.value_bytes.clone()))
                            )
                        })
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
                9 => match marked.take() {
                    // Appends may come between the mark and the sync: only the mark counts.
                    None => match l.durability_mark().await {
                        Ok(mark) => {
                            marked = mark;
                            flushed = appended.len();
                            true
                        }
                        Err(_) => false,
                    },
                    Some(mark) => match sim.sync_file_system(&dir).await {
                        Ok(()) => {
                            l.note_durable(mark);
                            synced = synced.max(mark.end() as usize);
                            true
                        }
                        Err(e) => {
                            l.note_durability_failed(e);
                            false
                        }
                    },
                },
                _ => {
                    // Clean close, then a reopen that trusts it.
                    marked = None;
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
            if !ok || sim.has_crashed() || killed {
                if sim.writes_in_flight() > 0 {
                    mid_write += 1;
                }
                let kind = crash_kind(&mut rng);
                // The "process" dies: it must not write anything more.
                marked = None;
                if let Some(l) = log.take() {
                    std::mem::forget(l);
                }
                sim.crash(kind);
                let mut l = open(false).await.unwrap();
                let got = read_values(&mut l).await;
                let must_have = match kind {
                    CrashKind::ProcessKill => flushed,
                    CrashKind::DamagingPowerLoss { .. } => 0,
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
            "seed {seed}: {crashes} crashes ({mid_write} with writes in flight), \
             {lost_unacked} unacknowledged records lost, {} kept",
            appended.len()
        );
        counted.store(mid_write, Ordering::Relaxed);
        assert!(
            crashes > 0,
            "seed {seed}: the plan never crashed; the test would prove nothing"
        );
    });
    mid_write_crashes.load(Ordering::Relaxed)
}

fn run_cases(profile: Profile, default_cases: u64) {
    let mut mid_write = 0;
    for seed in common::seeds("SHARDLOG_CRASH", default_cases) {
        mid_write += one_case(seed, profile.clone());
    }
    assert!(
        mid_write > 0 || !profile.fills_chunks,
        "no crash came with writes in flight: the out-of-order disk was never tested"
    );
}

#[test]
fn crashes_keep_a_prefix_with_everything_acknowledged() {
    run_cases(SMALL, 30);
}

#[test]
fn crashes_of_megabyte_chunks_in_flight_keep_a_prefix_with_everything_acknowledged() {
    run_cases(LARGE, 6);
}
