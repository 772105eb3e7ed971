//! One read path for both tiers: a sealed segment written by the engine (real files, io_uring),
//! copied as objects into a local-directory bucket, then read through `OpenRemoteSegment`
//! (the local segment's code over the objects) gives exactly what the local log gives: the
//! same bytes for every offset and bound, the same answer to every timestamp lookup, with
//! or without its index objects. Objects that are not the segment's are refused.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use common::*;
use shardlog::log::{segment_path, PartitionLog, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use shardlog::remote::chunks;
use shardlog::remote::keys;
use shardlog::remote::manifest::{RemoteFile, RemoteSegment};
use shardlog::remote::segment_files::OpenRemoteSegment;
use shardlog::remote::store::RemoteStore;
use shardlog::remote::RemoteError;
use shardlog::LogConfig;

const TOPIC: &str = "t";
const BATCHES: i64 = 60;

/// Offsets `3k..3k+3` in batch `k`, timestamps `1000 + 10 * offset` with one step back per
/// batch (the time index keeps the maximum, as Kafka's does).
async fn write_sealed_segment(dir: &Path) -> PartitionLog {
    let config = LogConfig {
        index_interval_bytes: 256,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
    for k in 0..BATCHES {
        let ts: Vec<i64> = (0..3)
            .map(|i| 1000 + 10 * (3 * k + i) - 5 * (i % 2))
            .collect();
        log.append(&batch_with_timestamps(&ts)).await.unwrap();
    }
    log.roll_now().await.unwrap();
    assert!(log.segments()[0].is_sealed());
    log
}

/// Copies the segment's files into the bucket under their keys; the manifest's entry.
async fn upload(store: &RemoteStore, dir: &Path, suffixes: &[&str]) -> RemoteSegment {
    let mut files = Vec::new();
    for suffix in suffixes {
        let data = std::fs::read(segment_path(&dir.join("t-0"), 0, suffix)).unwrap();
        let key = keys::segment_file(TOPIC, 0, 0, &keys::upload_id(), suffix);
        store
            .put_new(store.key(&key), Bytes::from(data.clone()))
            .await
            .unwrap();
        let (size, crc32c) = (data.len() as u64, crc32c::crc32c(&data));
        let suffix = suffix.to_string();
        files.push(RemoteFile {
            suffix,
            key,
            size,
            crc32c,
        });
    }
    RemoteSegment {
        base_offset: 0,
        last_offset: 3 * BATCHES - 1,
        max_timestamp_ms: 1000 + 10 * (3 * BATCHES - 1),
        size_bytes: files[0].size,
        uploaded_ms: 0,
        files,
    }
}

fn bucket(dir: &Path) -> RemoteStore {
    let root = dir.join("bucket");
    std::fs::create_dir_all(&root).unwrap();
    let fs = object_store::local::LocalFileSystem::new_with_prefix(&root).unwrap();
    RemoteStore::start(Arc::new(fs), object_store::path::Path::from("p")).unwrap()
}

async fn open(store: &RemoteStore, seg: &RemoteSegment) -> Result<OpenRemoteSegment, RemoteError> {
    OpenRemoteSegment::open(store, &keys::partition_dir(TOPIC, 0), seg).await
}

/// Every offset and a spread of bounds, and every timestamp around the records', agree
/// with the local log.
async fn assert_same_answers(local: &mut PartitionLog, remote: &mut OpenRemoteSegment) {
    for offset in 0..3 * BATCHES {
        for max_bytes in [1, 100, 1000, 64 << 10] {
            let want = local.read(offset, max_bytes).await.unwrap().to_bytes();
            let got = remote.read(offset, max_bytes, true).await.unwrap();
            assert_eq!(got, want, "offset {offset}, max_bytes {max_bytes}");
            let strict = remote.read(offset, max_bytes, false).await.unwrap();
            assert!(want.starts_with(&strict), "a strict bound serves a prefix");
        }
    }
    for target in (990..1000 + 10 * 3 * BATCHES + 10).step_by(3) {
        let want = local.find_offset_by_timestamp(target).await.unwrap();
        let want = want.map(|w| (w.offset, w.timestamp));
        let got = remote.find_by_timestamp(target, 0).await.unwrap();
        assert_eq!(got, want, "timestamp {target}");
    }
}

#[test]
fn a_remote_segment_answers_as_the_local_one_with_or_without_its_indexes() {
    run(|dir| async move {
        chunks::set_budget(64 << 20);
        let mut local = write_sealed_segment(&dir).await;
        let store = bucket(&dir);
        let all = [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX];
        let seg = upload(&store, &dir, &all).await;
        let mut remote = open(&store, &seg).await.unwrap();
        assert_same_answers(&mut local, &mut remote).await;

        // No index objects: the indexes are rebuilt in memory from the `.log`.
        let seg = upload(&store, &dir, &[LOG_SUFFIX]).await;
        let mut remote = open(&store, &seg).await.unwrap();
        assert_same_answers(&mut local, &mut remote).await;
        assert!(
            remote
                .read(3 * BATCHES, 1 << 20, true)
                .await
                .unwrap()
                .is_empty(),
            "nothing past the segment's end"
        );
        chunks::clear();
    });
}

#[test]
fn objects_that_are_not_the_manifests_segment_are_refused() {
    run(|dir| async move {
        chunks::set_budget(64 << 20);
        let mut local = write_sealed_segment(&dir).await;
        let store = bucket(&dir);
        let all = [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX];

        // The manifest says the segment ends earlier than its batches do.
        let mut short = upload(&store, &dir, &all).await;
        short.last_offset = 3 * BATCHES - 4;
        let refused = open(&store, &short).await.err().expect("refused");
        assert!(matches!(refused, RemoteError::Corrupt { .. }), "{refused}");
        assert!(
            refused.to_string().contains(&short.files[0].key),
            "{refused}"
        );

        // A byte flipped inside the first batch's records: its CRC fails, it is never
        // served; the batches after it are.
        let seg = upload(&store, &dir, &all).await;
        let path = dir.join("bucket/p").join(&seg.files[0].key);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[70] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let mut remote = open(&store, &seg).await.unwrap();
        let refused = remote.read(0, 1 << 20, true).await.expect_err("refused");
        assert!(matches!(refused, RemoteError::Corrupt { .. }), "{refused}");
        assert!(refused.to_string().contains(&seg.files[0].key), "{refused}");
        let after = remote.read(3, 1 << 20, true).await.unwrap();
        assert_eq!(after, local.read(3, 1 << 20).await.unwrap().to_bytes());

        // An index object that fails the manifest's CRC is derived data gone bad: rebuilt
        // from the `.log` in memory, and the answers stay exact.
        let seg = upload(&store, &dir, &all).await;
        let index = dir.join("bucket/p").join(&seg.files[1].key);
        let mut bytes = std::fs::read(&index).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&index, bytes).unwrap();
        let mut remote = open(&store, &seg).await.unwrap();
        assert_same_answers(&mut local, &mut remote).await;
        chunks::clear();
    });
}

/// A reader walking a remote segment fetch by fetch opens it once (its indexes read and
/// checked once), and every fetch still answers as the local log.
#[test]
fn a_reader_walking_a_remote_segment_opens_it_once() {
    use shardlog::format::cursor::BatchCursor;
    use shardlog::metrics::Gauges;
    use shardlog::remote::manifest::PartitionManifest;
    use shardlog::remote::RemoteLog;
    run(|dir| async move {
        chunks::set_budget(64 << 20);
        let mut local = write_sealed_segment(&dir).await;
        let store = bucket(&dir);
        let all = [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX];
        let mut manifest = PartitionManifest::new("writer", TOPIC, 0, 0);
        manifest.segments.push(upload(&store, &dir, &all).await);
        let key = store.key(&keys::partition_manifest(TOPIC, 0));
        store.put_new(key, manifest.to_bytes()).await.unwrap();
        let log = RemoteLog::new(store.clone(), "reader".into(), TOPIC, 0, true);
        let opens = || {
            shardlog::metrics::snapshot(0, Gauges::default())
                .remote
                .segment_opens
        };
        let before = opens();
        let (mut offset, mut fetches) = (0, 0);
        while offset < 3 * BATCHES {
            let got = shardlog::remote::read::read(&log, offset, 300, true)
                .await
                .unwrap();
            let want = local.read(offset, 300).await.unwrap().to_bytes();
            assert_eq!(got, want, "offset {offset}");
            let last = BatchCursor::new(&got[..])
                .filter_map(Result::ok)
                .last()
                .unwrap();
            offset = last.1.last_offset() + 1;
            fetches += 1;
        }
        let found = shardlog::remote::read::find_by_timestamp(&log, 1_500, 0)
            .await
            .unwrap();
        let want = local.find_offset_by_timestamp(1_500).await.unwrap();
        assert_eq!(found, want.map(|w| (w.offset, w.timestamp)));
        assert!(fetches > 10, "{fetches} fetches");
        assert_eq!(
            opens() - before,
            1,
            "one open for {fetches} fetches and a lookup"
        );
        chunks::clear();
    });
}
