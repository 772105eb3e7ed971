//! The remote tier's on-disk chunk cache on a real directory (io_uring, direct I/O): chunks
//! come back byte for byte, the least recently used leave beyond the budget (their files
//! too), unreadable entries are forgotten, and DropCaches empties it.

use crate::common;

use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use shardlog::remote::disk_cache;

/// Lets the background writes and removals run.
async fn settle() {
    glommio::timer::sleep(Duration::from_millis(200)).await;
}

fn files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn chunks_come_back_and_the_budget_holds() {
    common::run(|dir| async move {
        let storage: Rc<dyn shardlog::io::Storage> = shardlog::io::DmaStorage::new(dir.clone());
        let cache_dir = dir.join("cache");
        std::fs::create_dir_all(&cache_dir).unwrap();
        std::fs::write(cache_dir.join("leftover.chunk"), b"old").unwrap();
        disk_cache::open(storage, cache_dir.clone(), 3 << 20)
            .await
            .unwrap();
        assert_eq!(
            files(&cache_dir),
            0,
            "leftovers of an earlier run are removed"
        );

        let key: Rc<str> = "topics/t/0/x.log".into();
        let chunk = |n: u8| Bytes::from(vec![n; 1 << 20]);
        for n in 0..4u8 {
            disk_cache::put(key.clone(), n as u64, chunk(n));
            settle().await;
        }
        assert!(disk_cache::bytes() <= 3 << 20);
        assert_eq!(files(&cache_dir), 3, "the evicted chunk's file went too");
        assert!(
            disk_cache::get(&key, 0).await.is_none(),
            "the oldest is evicted"
        );
        assert_eq!(disk_cache::get(&key, 3).await.unwrap(), chunk(3));
        assert_eq!(disk_cache::get(&key, 1).await.unwrap(), chunk(1));

        // A file that went missing is forgotten, not an error.
        for e in std::fs::read_dir(&cache_dir).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        assert!(disk_cache::get(&key, 2).await.is_none());
        disk_cache::put(key.clone(), 7, chunk(7));
        settle().await;
        disk_cache::clear();
        settle().await;
        assert!(disk_cache::get(&key, 7).await.is_none());
        assert_eq!((disk_cache::bytes(), files(&cache_dir)), (0, 0));
    });
}

/// A remote object read front to back gets its next chunks fetched ahead: after three
/// sequential reads the following `AHEAD` chunks are in memory, so they are served even
/// once the object is gone from the store, while a chunk further on is not.
#[test]
fn sequential_remote_reads_fetch_the_next_chunks_ahead() {
    use shardlog::remote::chunks::{self, AHEAD, CHUNK_BYTES};
    use shardlog::remote::manifest::RemoteFile;
    common::run(|dir| async move {
        let bucket = dir.join("bucket");
        std::fs::create_dir_all(&bucket).unwrap();
        let fs = object_store::local::LocalFileSystem::new_with_prefix(&bucket).unwrap();
        let store = shardlog::remote::store::RemoteStore::start(
            std::sync::Arc::new(fs),
            object_store::path::Path::from("p"),
        )
        .unwrap();
        chunks::set_budget(256 << 20);
        let size = 12 * CHUNK_BYTES;
        let data: Vec<u8> = (0..size).map(|i| (i / 4096) as u8 ^ i as u8).collect();
        let key = "topics/t/0/seq.log";
        store
            .put_new(store.key(key), Bytes::from(data.clone()))
            .await
            .unwrap();
        let file = RemoteFile {
            suffix: ".log".into(),
            key: key.into(),
            size,
            crc32c: crc32c::crc32c(&data),
        };
        let read =
            |n: u64| chunks::read_range(&store, &file, n * CHUNK_BYTES, (n + 1) * CHUNK_BYTES);
        for n in 0..3 {
            let got = read(n).await.unwrap();
            assert_eq!(
                got,
                data[(n * CHUNK_BYTES) as usize..((n + 1) * CHUNK_BYTES) as usize]
            );
        }
        // The fetches ahead land; then the object goes away behind the reader's back.
        glommio::timer::sleep(Duration::from_millis(500)).await;
        std::fs::remove_file(bucket.join("p").join(key)).unwrap();
        for n in 3..3 + AHEAD {
            let at = (n * CHUNK_BYTES) as usize;
            let got = read(n).await.expect("fetched ahead, served from memory");
            assert_eq!(got, data[at..at + CHUNK_BYTES as usize]);
        }
        assert!(
            read(11).await.is_err(),
            "a chunk nobody asked for ahead comes from the store, which lost it"
        );
        chunks::clear();
    });
}
