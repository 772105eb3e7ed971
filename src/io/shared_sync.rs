//! One file-system sync shared by everyone on a shard who waits for durability at the same
//! time. A partition that goes idle with records written but not yet fdatasync'd joins the
//! next round instead of syncing its own `.log`: written across 10,000 partitions, each
//! idle fdatasync was a journal commit of its own, and they halved the shard's write
//! throughput. A round gathers joiners for `GATHER`, then runs one `syncfs`; whoever joins
//! while it runs waits for the next round, whose sync starts after they joined.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};

use super::storage::Storage;

/// How long a round gathers joiners before its sync (as Redpanda's default `flush.ms`).
const GATHER: Duration = Duration::from_millis(100);

/// What a round's sync came to, for every joiner of it.
pub type SyncOutcome = Result<(), SyncFailure>;

/// A failed file-system sync, shared by the joiners of its round.
#[derive(Clone, Debug)]
pub struct SyncFailure(Rc<std::io::Error>);

impl SyncFailure {
    /// The failure as an I/O error of one joiner's own (with its OS error code, so the
    /// joiner tells a full disk from a broken one).
    pub fn to_io_error(&self) -> std::io::Error {
        match self.0.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(self.0.kind(), self.0.to_string()),
        }
    }
}

/// The shard's shared file-system sync of the file system holding `dir`.
pub struct SharedSync {
    storage: Rc<dyn Storage>,
    dir: PathBuf,
    waiting: RefCell<Vec<LocalSender<SyncOutcome>>>,
    /// Whether a round is gathering or syncing now.
    running: Cell<bool>,
    /// Rounds synced so far.
    rounds: Cell<u64>,
}

impl SharedSync {
    pub fn new(storage: Rc<dyn Storage>, dir: PathBuf) -> Rc<Self> {
        Rc::new(SharedSync {
            storage,
            dir,
            waiting: RefCell::new(Vec::new()),
            running: Cell::new(false),
            rounds: Cell::new(0),
        })
    }

    /// Joins the next round: the receiver gets its outcome once a file-system sync that
    /// started after this call has completed, so everything written before it is durable.
    pub fn join(self: &Rc<Self>) -> LocalReceiver<SyncOutcome> {
        let (tx, rx) = local_channel::new_bounded(1);
        self.waiting.borrow_mut().push(tx);
        if !self.running.replace(true) {
            crate::tasks::spawn_later(self.clone().run_rounds()).detach();
        }
        rx
    }

    /// Rounds synced so far.
    pub fn rounds(&self) -> u64 {
        self.rounds.get()
    }

    /// Gathers, syncs and answers rounds until one gathers nobody.
    async fn run_rounds(self: Rc<Self>) {
        loop {
            glommio::timer::sleep(GATHER).await;
            let joined = std::mem::take(&mut *self.waiting.borrow_mut());
            if joined.is_empty() {
                self.running.set(false);
                return;
            }
            let outcome = self.storage.sync_file_system(&self.dir).await;
            let outcome = outcome.map_err(|e| SyncFailure(Rc::new(e)));
            if let Err(e) = &outcome {
                tracing::error!(dir = %self.dir.display(), error = %e.0, joiners = joined.len(), "shared file-system sync failed");
            }
            self.rounds.set(self.rounds.get() + 1);
            for joiner in joined {
                // A joiner that stopped waiting (its partition closed) needs no answer.
                let _ = joiner.try_send(outcome.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::sim::{CrashKind, SimStorage};
    use crate::io::OpenMode;
    use std::path::Path;

    /// Writes 4 KiB of `fill` at `pos` of `path` without a sync.
    async fn write_unsynced(sim: &SimStorage, path: &Path, pos: u64, fill: u8) {
        let mode = match sim.exists(path) {
            true => OpenMode::ReadWrite,
            false => OpenMode::CreateNew,
        };
        let file = sim.open(path, mode).await.unwrap();
        let mut buf = file.alloc_buffer(4096);
        buf.as_bytes_mut().fill(fill);
        file.write_at(buf, pos).await.unwrap();
        file.close().await.unwrap();
    }

    fn durable_len(sim: &SimStorage, path: &Path) -> usize {
        let cut = sim.fork();
        cut.crash(CrashKind::PowerLoss);
        futures_lite::future::block_on(cut.read_file(path)).map_or(0, |d| d.len())
    }

    #[test]
    fn joiners_of_a_round_share_one_sync_and_later_ones_wait_for_the_next() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                sim.create_dir_all("/d".as_ref()).unwrap();
                let shared = SharedSync::new(Rc::new(sim.clone()), "/d".into());
                let (a, b): (&Path, &Path) = ("/d/a".as_ref(), "/d/b".as_ref());
                write_unsynced(&sim, a, 0, 1).await;
                write_unsynced(&sim, b, 0, 2).await;
                let (first, second) = (shared.join(), shared.join());
                assert_eq!(
                    durable_len(&sim, a),
                    0,
                    "nothing is synced before the round"
                );
                first.recv().await.unwrap().unwrap();
                second.recv().await.unwrap().unwrap();
                assert_eq!(shared.rounds(), 1, "one sync for both joiners");
                assert_eq!((durable_len(&sim, a), durable_len(&sim, b)), (4096, 4096));
                // Written after the round: durable only through the next one.
                write_unsynced(&sim, a, 4096, 3).await;
                let third = shared.join();
                assert_eq!(durable_len(&sim, a), 4096);
                third.recv().await.unwrap().unwrap();
                assert_eq!((shared.rounds(), durable_len(&sim, a)), (2, 8192));
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_failed_sync_reaches_every_joiner_with_its_os_error() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                sim.create_dir_all("/d".as_ref()).unwrap();
                let shared = SharedSync::new(Rc::new(sim.clone()), "/d".into());
                sim.fail_at(crate::io::sim::FaultPoint::Sync, 1, libc::EIO);
                let (first, second) = (shared.join(), shared.join());
                for joiner in [first, second] {
                    let e = joiner.recv().await.unwrap().unwrap_err().to_io_error();
                    assert_eq!(e.raw_os_error(), Some(libc::EIO));
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
