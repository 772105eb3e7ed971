//! The remote tier's on-disk chunk cache on a real directory (io_uring, direct I/O): chunks
//! come back byte for byte, the least recently used leave beyond the budget (their files
//! too), unreadable entries are forgotten, and DropCaches empties it.

mod common;

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
