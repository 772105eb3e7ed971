//! Crashes at every step of retention and of cleaning, on the simulated disk: each write,
//! fdatasync, rename and remove in turn is where the process dies (kill -9 and power loss).
//! After the reopen, every original segment reads exactly as before or exactly as after its
//! step; nothing else is possible.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::run;
use shardlog::config::CleanupPolicy;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::sim::{CrashKind, FaultPoint, SimStorage};
use shardlog::log::{CleanerLimits, OpenOptions, PartitionLog};
use shardlog::LogConfig;

type Records = BTreeMap<i64, (String, Option<String>)>;

fn dir() -> PathBuf {
    PathBuf::from("/sim/data/t-0")
}

async fn open(sim: &SimStorage, config: &LogConfig) -> shardlog::Result<PartitionLog> {
    PartitionLog::open_with(
        sim.as_storage(),
        &dir(),
        config.clone(),
        OpenOptions::default(),
    )
    .await
}

async fn records(log: &mut PartitionLog) -> Records {
    let mut out = Records::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let data = log.read(next, 1 << 20).await.unwrap().to_bytes();
        if data.is_empty() {
            break;
        }
        for (start, h) in split_batches(&data).unwrap() {
            for r in RecordsSection::of(&data[start..start + h.size()], &h)
                .unwrap()
                .decode()
                .unwrap()
            {
                if r.offset >= next {
                    let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                    let value = r.value.map(|v| String::from_utf8(v.to_vec()).unwrap());
                    out.insert(r.offset, (key, value));
                }
            }
            next = h.last_offset() + 1;
        }
    }
    out
}

/// A log of several sealed segments: keys overwritten, some tombstones, old timestamps.
async fn build(sim: &SimStorage, config: &LogConfig) -> Vec<i64> {
    let mut log = open(sim, config).await.unwrap();
    let now = shardlog::time::now_ms();
    for i in 0..60 {
        let key = format!("k{}", i % 7);
        let value = (i % 11 != 5).then(|| format!("v{i}"));
        let b = BatchBuilder::new(128)
            .record(
                RecordSpec::new(Some(key.as_bytes()), value.as_deref().map(str::as_bytes))
                    .timestamp(now - 10 * 3_600_000 + i),
            )
            .build();
        log.append(&b).await.unwrap();
    }
    log.roll_now().await.unwrap();
    let bases = log.segments().iter().map(|s| s.base_offset()).collect();
    log.close().await.unwrap();
    bases
}

/// Each segment range of `got` equals that range in `before` or in `after`.
fn per_segment_before_or_after(got: &Records, before: &Records, after: &Records, bases: &[i64]) {
    for (i, &base) in bases.iter().enumerate() {
        let end = bases.get(i + 1).copied().unwrap_or(i64::MAX);
        let part = |r: &Records| -> Vec<(i64, (String, Option<String>))> {
            r.range(base..end).map(|(k, v)| (*k, v.clone())).collect()
        };
        let g = part(got);
        assert!(
            g == part(before) || g == part(after),
            "segment {base}: {g:?}\nbefore {:?}\nafter {:?}",
            part(before),
            part(after)
        );
    }
}

/// Runs `step` on a fork of `base` with a crash armed by `arm`; returns whether it crashed.
async fn crash_run(
    base: &SimStorage,
    config: &LogConfig,
    kind: CrashKind,
    arm: impl Fn(&SimStorage),
    step: impl AsyncFn(&mut PartitionLog),
) -> Option<Records> {
    let sim = base.fork();
    let mut log = open(&sim, config).await.unwrap();
    arm(&sim);
    step(&mut log).await;
    let crashed = sim.has_crashed();
    drop(log);
    sim.crash(kind);
    let mut log = open(&sim, config).await.unwrap();
    let got = records(&mut log).await;
    crashed.then_some(got)
}

async fn check_every_crash_point(
    config: LogConfig,
    step: impl AsyncFn(&mut PartitionLog) + Copy,
) -> usize {
    let base = SimStorage::new();
    let bases = build(&base, &config).await;
    let before = {
        let mut log = open(&base.fork(), &config).await.unwrap();
        records(&mut log).await
    };
    let after = {
        let sim = base.fork();
        let mut log = open(&sim, &config).await.unwrap();
        step(&mut log).await;
        log.close().await.unwrap();
        let mut log = open(&sim, &config).await.unwrap();
        records(&mut log).await
    };
    assert_ne!(before, after, "the step must change something");
    let mut points = 0;
    for kind in [CrashKind::ProcessKill, CrashKind::PowerLoss] {
        type Arm = fn(&SimStorage, u64);
        let arms: [Arm; 3] = [
            |s, n| s.crash_at(FaultPoint::Write, n),
            |s, n| s.crash_at(FaultPoint::Sync, n),
            |s, n| s.crash_at(FaultPoint::Meta, n),
        ];
        for arm in arms {
            for n in 1.. {
                let got = crash_run(&base, &config, kind, |s| arm(s, n), step).await;
                let Some(got) = got else { break };
                per_segment_before_or_after(&got, &before, &after, &bases);
                points += 1;
            }
        }
    }
    points
}

fn ignore_errors<T>(r: shardlog::Result<T>) {
    drop(r);
}

#[test]
fn a_crash_at_any_step_of_cleaning_leaves_each_segment_before_or_after() {
    run(|_| async move {
        let config = LogConfig {
            segment_bytes: 700,
            cleanup_policy: CleanupPolicy::Compact,
            ..LogConfig::default()
        };
        let points = check_every_crash_point(config, async |log| {
            ignore_errors(
                log.clean_now(shardlog::time::now_ms(), CleanerLimits::default())
                    .await,
            )
        })
        .await;
        eprintln!("cleaning: {points} crash points checked");
        assert!(points > 20, "{points}");
    });
}

#[test]
fn a_crash_at_any_step_of_retention_leaves_each_segment_before_or_after() {
    run(|_| async move {
        let config = LogConfig {
            segment_bytes: 700,
            retention_ms: 3_600_000,
            file_delete_delay_ms: 0,
            ..LogConfig::default()
        };
        let points = check_every_crash_point(config, async |log| {
            ignore_errors(log.apply_retention(shardlog::time::now_ms()).await)
        })
        .await;
        eprintln!("retention: {points} crash points checked");
        assert!(points > 5, "{points}");
    });
}
