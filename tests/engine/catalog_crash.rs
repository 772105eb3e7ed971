//! Crashes at every durable step of the topic admin operations, on the simulated disk: each
//! write, fdatasync and metadata step (create, rename, remove, directory fsync) of create,
//! delete and alter in turn is where the process dies (kill -9) or the power goes. After
//! the start-up pass (`data_dir::prepare`) and the load every shard does, each topic is
//! either fully there (its metadata and every partition directory, each one opening) or
//! fully gone (no metadata, no marker, no partition directory left to serve); an altered
//! topic has its old config or its new one, never anything else.
//!
//! The steps are the catalog's own functions, called in the controller's order on one
//! shard: create opens every partition (`OpenTopic`) and then writes the metadata file (the
//! commit point); delete renames the metadata to its deletion marker (the commit point),
//! trashes the partition directories with one fsync of the data directory, and removes the
//! marker; alter rewrites the metadata file.

use crate::common;

use std::path::{Path, PathBuf};

use common::run;
use shardlog::catalog::data_dir;
use shardlog::catalog::topics::{self, TopicConfig, TopicMeta};
use shardlog::config::LogConfig;
use shardlog::io::sim::{CrashKind, FaultPoint, SimStorage};
use shardlog::log::{partition_dir_name, OpenOptions, PartitionLog};

const PARTITIONS: u32 = 3;
/// What a topic grows to (CreatePartitions).
const GROWN: u32 = 5;

fn data() -> PathBuf {
    PathBuf::from("/sim/data")
}

fn topic(pairs: &[(&str, &str)]) -> TopicMeta {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let config = TopicConfig::from_pairs(&LogConfig::default(), &pairs).unwrap();
    TopicMeta::new("orders".into(), PARTITIONS, config, 1)
}

/// Opens (and closes) partition `p` of `meta` as a restart does.
async fn open_partition(sim: &SimStorage, meta: &TopicMeta, p: u32) -> shardlog::Result<()> {
    let dir = data().join(partition_dir_name(&meta.name, p));
    let config = meta.config.log.clone();
    let log = PartitionLog::open_with(sim.as_storage(), &dir, config, OpenOptions::default());
    log.await?.close().await
}

/// Opens the partitions `from..` of `meta` as a shard opens new ones: their files written
/// without a sync each, then two file-system syncs for all of them.
async fn open_new_partitions(sim: &SimStorage, meta: &TopicMeta, from: u32) -> Result<(), String> {
    let deferred = shardlog::io::DeferredSyncs::new(sim.as_storage());
    let dir_of = |p| data().join(partition_dir_name(&meta.name, p));
    deferred.defer_under((from..meta.partitions()).map(dir_of));
    for p in from..meta.partitions() {
        let dir = dir_of(p);
        let config = meta.config.log.clone();
        let log = PartitionLog::open_with(deferred.clone(), &dir, config, OpenOptions::default());
        let opened = log.await.map_err(|e| e.to_string())?;
        opened.close().await.map_err(|e| e.to_string())?;
    }
    deferred
        .sync_deferred(&data())
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Create as the controller runs it: every partition opened, then the commit point.
async fn create(sim: &SimStorage, meta: &TopicMeta) -> Result<(), String> {
    open_new_partitions(sim, meta, 0).await?;
    let storage = sim.as_storage();
    let persisted = meta.persist(&*storage, &data(), 1).await;
    persisted.map_err(|e| e.to_string())
}

/// Delete as the controller and the owner shard run it.
async fn delete(sim: &SimStorage, meta: &TopicMeta) -> std::io::Result<()> {
    let storage = sim.as_storage();
    TopicMeta::mark_deleting(&*storage, &data(), &meta.name).await?;
    for p in 0..PARTITIONS {
        data_dir::move_to_trash(&*storage, &data(), &partition_dir_name(&meta.name, p)).await?;
    }
    storage.sync_dir(&data()).await?;
    topics::finish_deletion(&*storage, &data(), &meta.name).await
}

/// CreatePartitions as the controller runs it: the new partitions opened, then the commit
/// point (the metadata file with the new count).
async fn grow(sim: &SimStorage, grown: &TopicMeta, from: u32) -> Result<(), String> {
    open_new_partitions(sim, grown, from).await?;
    let storage = sim.as_storage();
    let persisted = grown.persist(&*storage, &data(), 1).await;
    persisted.map_err(|e| e.to_string())
}

async fn alter(sim: &SimStorage, altered: &TopicMeta) -> std::io::Result<()> {
    altered.persist(&*sim.as_storage(), &data(), 1).await
}

/// What a restart finds of the topic: `None` when it is fully gone, its metadata when it
/// is fully there. Anything in between fails the test.
async fn restart(sim: &SimStorage) -> Option<TopicMeta> {
    let storage = sim.as_storage();
    data_dir::prepare(&*storage, &data(), 1).await.unwrap();
    let (metas, _) = topics::load_all(&*storage, &data(), 1, &LogConfig::default())
        .await
        .unwrap();
    assert!(metas.len() <= 1, "{metas:?}");
    let dirs = storage.list_dirs(&data()).unwrap();
    let served: Vec<&String> = dirs.iter().filter(|d| is_partition_dir(d)).collect();
    assert!(topics::pending_deletions(&*storage, &data())
        .unwrap()
        .is_empty());
    let Some(meta) = metas.into_iter().next() else {
        assert!(served.is_empty(), "no topic, yet {served:?} remain");
        return None;
    };
    assert_eq!(served.len(), meta.partitions() as usize, "{dirs:?}");
    for p in 0..meta.partitions() {
        open_partition(sim, &meta, p).await.unwrap();
    }
    Some(meta)
}

fn is_partition_dir(name: &str) -> bool {
    (0..GROWN).any(|p| name == partition_dir_name("orders", p))
}

/// Runs `step` on a fork of `base` for each crash point in turn (each kind of fault point,
/// n = 1, 2, ... until the step completes before the n-th), crashes in `kind`, restarts,
/// and hands what the restart found to `check`. Returns the crash points checked.
async fn every_crash_point(
    base: &SimStorage,
    step: impl AsyncFn(&SimStorage),
    mut check: impl FnMut(Option<TopicMeta>),
) -> usize {
    let mut points = 0;
    for kind in [CrashKind::ProcessKill, CrashKind::PowerLoss] {
        for point in [FaultPoint::Write, FaultPoint::Sync, FaultPoint::Meta] {
            for n in 1.. {
                let sim = base.fork();
                sim.crash_at(point, n);
                step(&sim).await;
                if !sim.has_crashed() {
                    break;
                }
                sim.crash(kind);
                sim.clear_faults();
                check(restart(&sim).await);
                points += 1;
            }
        }
    }
    points
}

fn empty_disk() -> SimStorage {
    let sim = SimStorage::new();
    sim.as_storage().create_dir_all(&data()).unwrap();
    sim
}

/// Crashes `step` at every point; each restart must find `meta` whole or nothing of it.
/// Returns (crash points, whole, absent).
async fn whole_or_absent(
    base: &SimStorage,
    meta: &TopicMeta,
    step: impl AsyncFn(&SimStorage),
) -> (usize, usize, usize) {
    let (mut whole, mut absent) = (0, 0);
    let points = every_crash_point(base, step, |found| match found {
        Some(m) => {
            assert_eq!(&m, meta);
            whole += 1;
        }
        None => absent += 1,
    })
    .await;
    (points, whole, absent)
}

#[test]
fn a_crash_at_any_step_of_create_leaves_the_topic_whole_or_absent() {
    run(|_| async move {
        let meta = topic(&[("segment.bytes", "4096")]);
        let base = empty_disk();
        let step = async |sim: &SimStorage| drop(create(sim, &meta).await);
        let (points, whole, absent) = whole_or_absent(&base, &meta, step).await;
        eprintln!("create: {points} crash points: {whole} whole, {absent} absent");
        assert!(points > 10 && absent > 0, "{points} {absent}");
    });
}

#[test]
fn a_crash_at_any_step_of_delete_leaves_the_topic_whole_or_absent() {
    run(|_| async move {
        let meta = topic(&[]);
        let base = empty_disk();
        create(&base, &meta).await.unwrap();
        let step = async |sim: &SimStorage| drop(delete(sim, &meta).await);
        let (points, whole, absent) = whole_or_absent(&base, &meta, step).await;
        eprintln!("delete: {points} crash points: {whole} whole, {absent} absent");
        assert!(
            points > 3 && whole > 0 && absent > 0,
            "{points} {whole} {absent}"
        );
    });
}

#[test]
fn a_crash_at_any_step_of_alter_leaves_the_old_config_or_the_new() {
    run(|_| async move {
        let before = topic(&[("retention.ms", "60000")]);
        let after = TopicMeta {
            config: before
                .config
                .altered(
                    &LogConfig::default(),
                    &[("retention.ms".into(), "120000".into())],
                    &[],
                )
                .unwrap(),
            ..before.clone()
        };
        let base = empty_disk();
        create(&base, &before).await.unwrap();
        let (mut old, mut new) = (0, 0);
        let points = every_crash_point(
            &base,
            async |sim| drop(alter(sim, &after).await),
            |found| match found {
                Some(m) if m == before => old += 1,
                Some(m) if m == after => new += 1,
                other => panic!("an alter crashed into {other:?}"),
            },
        )
        .await;
        eprintln!("alter: {points} crash points: {old} old, {new} new");
        assert!(points > 3 && old > 0, "{points} {old} {new}");
    });
}

#[test]
fn a_crash_at_any_step_of_create_partitions_leaves_the_old_count_or_the_new() {
    run(|_| async move {
        let before = topic(&[]);
        let after = before.grown(GROWN, 1);
        let base = empty_disk();
        create(&base, &before).await.unwrap();
        let (mut old, mut new) = (0, 0);
        let points = every_crash_point(
            &base,
            async |sim| drop(grow(sim, &after, PARTITIONS).await),
            |found| match found {
                Some(m) if m == before => old += 1,
                Some(m) if m == after => new += 1,
                other => panic!("a CreatePartitions crashed into {other:?}"),
            },
        )
        .await;
        eprintln!("create partitions: {points} crash points: {old} old, {new} new");
        assert!(points > 10 && old > 0, "{points} {old} {new}");
    });
}

/// The data directory path is the one the sim disk was given (a guard for the helpers).
#[test]
fn the_helpers_name_the_partitions_the_engine_names() {
    assert!(is_partition_dir(&partition_dir_name("orders", 0)));
    assert!(!is_partition_dir("orders-0.0000000000000001-delete"));
    assert_eq!(data(), Path::new("/sim/data"));
}

/// A metadata file copied under another name (an operator's backup beside the original)
/// would give the topic twice: the load refuses it by name instead of serving either.
#[test]
fn a_metadata_file_under_another_topics_name_is_refused() {
    run(|_| async move {
        let sim = empty_disk();
        let storage = sim.as_storage();
        let meta = topic(&[]);
        meta.persist(&*storage, &data(), 1).await.unwrap();
        let dir = topics::topics_dir(&data());
        let original = storage.read_file(&dir.join("orders.properties")).await;
        let copy = dir.join("orders-backup.properties");
        storage
            .write_file_atomic(&copy, original.unwrap())
            .await
            .unwrap();
        let refused = topics::load_all(&*storage, &data(), 1, &LogConfig::default()).await;
        let why = refused.unwrap_err().to_string();
        assert!(why.contains("orders-backup.properties"), "{why}");
        assert!(why.contains("records topic \"orders\""), "{why}");
        storage.remove(&copy).await.unwrap();
        let (metas, _) = topics::load_all(&*storage, &data(), 1, &LogConfig::default())
            .await
            .unwrap();
        assert_eq!(metas, vec![meta]);
    })
}
