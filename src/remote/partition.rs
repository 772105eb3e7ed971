//! One partition's remote tier on its owner shard: the manifest as last read or written,
//! and the one way to change it (a conditional write of the whole manifest, one change at a
//! time). A writer refuses a manifest another node writes; a read replica only reads. In a
//! cluster only the partition's leader writes, fenced by its leader epoch; followers read.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use glommio::sync::Semaphore;

use super::error::RemoteError;
use super::keys;
use super::manifest::PartitionManifest;
use super::store::{RemoteStore, Version};

/// What the remote tier holds and who may change it.
struct State {
    manifest: PartitionManifest,
    /// The manifest's version in the store; `None` while none has been written.
    version: Option<Version>,
    /// Whether `manifest` is what the store holds (false until read, and after a write
    /// whose outcome is unknown).
    loaded: bool,
}

/// Who changes a partition's remote tier on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriterRole {
    /// The only node (no cluster): its writer id is the whole check.
    Sole,
    /// The partition's leader in this epoch (cluster mode): it changes the manifest and
    /// stamps it with the epoch; a manifest stamped with a newer epoch is not its own.
    Leader(i32),
    /// A follower (cluster mode): it reads the manifest only, to learn what its local
    /// retention may delete.
    Follower,
}

pub struct RemoteLog {
    pub topic: Rc<str>,
    pub partition: u32,
    pub store: RemoteStore,
    /// This node's writer id; a manifest naming another one is not ours to change.
    writer: Rc<str>,
    read_only: bool,
    role: Cell<WriterRole>,
    state: RefCell<State>,
    /// One manifest change at a time (uploads, retention, DeleteRecords).
    turn: Semaphore,
    /// The local log's start, as its task last reported it.
    pub local_start: Cell<i64>,
    /// Bytes of local segments not yet copied, as the last pass saw them.
    pub upload_lag_bytes: Cell<u64>,
    /// Whether this process swept the partition's orphaned objects yet (once per start:
    /// a crash is what leaves them).
    pub swept: Cell<bool>,
    /// The topic description last written to the bucket by this partition (partition 0
    /// writes it), so it is rewritten only when it changes.
    pub described: RefCell<Option<super::manifest::TopicManifest>>,
    /// Whether the manifest was last found missing while the partition has a history
    /// (DescribeLogs reports it until a manifest is read, written or rebuilt).
    lost: Cell<bool>,
    /// Set when a rebuilt manifest is installed, so the uploader retries at once instead of
    /// waiting out its backoff.
    rebuilt: Cell<bool>,
    /// Remote segments opened by earlier reads, kept so a reader going through a segment
    /// does not decode its indexes again for every fetch (`read.rs`).
    pub(super) opened: RefCell<Vec<super::segment_files::OpenRemoteSegment>>,
}

impl RemoteLog {
    pub fn new(
        store: RemoteStore,
        writer: Rc<str>,
        topic: &str,
        partition: u32,
        read_only: bool,
    ) -> Rc<Self> {
        Rc::new(RemoteLog {
            topic: topic.into(),
            partition,
            store,
            state: RefCell::new(State {
                manifest: PartitionManifest::new(&writer, topic, partition, 0),
                version: None,
                loaded: false,
            }),
            writer,
            read_only,
            role: Cell::new(WriterRole::Sole),
            turn: Semaphore::new(1),
            local_start: Cell::new(0),
            upload_lag_bytes: Cell::new(0),
            swept: Cell::new(false),
            described: RefCell::new(None),
            lost: Cell::new(false),
            rebuilt: Cell::new(false),
            opened: RefCell::new(Vec::new()),
        })
    }

    /// Whether this node is a read replica of the bucket (`remote.read.replica`): every
    /// operation is answered from the remote tier, and nothing is written.
    pub fn is_read_replica(&self) -> bool {
        self.read_only
    }

    /// The writer id manifests of this node name.
    pub fn writer(&self) -> &str {
        &self.writer
    }

    pub fn role(&self) -> WriterRole {
        self.role.get()
    }

    /// Takes this node's part in the partition now. A node that starts leading reads the
    /// manifest afresh (another leader wrote it meanwhile) and sweeps orphans again, once
    /// it has stamped the manifest with its epoch (`uploader::claim`).
    pub fn set_role(&self, role: WriterRole) {
        if self.role.replace(role) != role && matches!(role, WriterRole::Leader(_)) {
            self.state.borrow_mut().loaded = false;
            self.swept.set(false);
        }
    }

    /// Why this node may not change the manifest now, if it may not.
    fn refuse_change(&self) -> Result<(), RemoteError> {
        let why = match (self.read_only, self.role.get()) {
            (true, _) => "this node is a read replica",
            (false, WriterRole::Follower) => {
                "this node follows the partition: its leader writes the remote tier"
            }
            _ => return Ok(()),
        };
        Err(RemoteError::Refused {
            key: self.manifest_key(),
            why: why.into(),
        })
    }

    /// Stamps `next` with this node's leader epoch, or refuses it when a newer leader
    /// already changed it (this node was deposed).
    fn stamp(&self, next: &mut PartitionManifest) -> Result<(), RemoteError> {
        let WriterRole::Leader(epoch) = self.role.get() else {
            return Ok(());
        };
        if let Some(newer) = next.leader_epoch.filter(|&e| e > epoch) {
            return Err(RemoteError::Refused {
                key: self.manifest_key(),
                why: format!(
                    "the leader of epoch {newer} writes it now; this node led in epoch {epoch}"
                ),
            });
        }
        next.leader_epoch = Some(epoch);
        Ok(())
    }

    fn manifest_key(&self) -> String {
        keys::partition_manifest(&self.topic, self.partition)
    }

    /// The manifest as last read or written (read from the store first if need be). When
    /// the store's manifest was lost, reads go on from the one this process last knew (its
    /// objects are still there); changes never do (`commit` reads strictly).
    pub async fn manifest(&self) -> Result<PartitionManifest, RemoteError> {
        match self.current().await {
            Err(RemoteError::ManifestMissing { .. })
                if !self.state.borrow().manifest.segments.is_empty() =>
            {
                Ok(self.state.borrow().manifest.clone())
            }
            other => other,
        }
    }

    /// The manifest the store holds now (read if this process does not know it).
    async fn current(&self) -> Result<PartitionManifest, RemoteError> {
        if !self.state.borrow().loaded {
            self.reload().await?;
        }
        Ok(self.state.borrow().manifest.clone())
    }

    /// The manifest as last known, without asking the store (may be stale or empty).
    pub fn cached_manifest(&self) -> PartitionManifest {
        self.state.borrow().manifest.clone()
    }

    /// Reads the manifest from the store. A writer refuses one another node writes.
    pub async fn reload(&self) -> Result<(), RemoteError> {
        let key = self.manifest_key();
        let (manifest, version) = match self.store.get(self.store.key(&key)).await {
            Ok((bytes, version)) => (PartitionManifest::parse(&key, &bytes)?, Some(version)),
            Err(RemoteError::NotFound(_)) => {
                self.refuse_lost_history(&key).await?;
                let start = self.local_start.get();
                (
                    PartitionManifest::new(&self.writer, &self.topic, self.partition, start),
                    None,
                )
            }
            Err(e) => return Err(e),
        };
        if !self.read_only && manifest.writer != *self.writer {
            return Err(RemoteError::Refused {
                key,
                why: format!(
                    "written by {:?}, and this node is {:?}",
                    manifest.writer, self.writer
                ),
            });
        }
        assert!(manifest.topic == *self.topic);
        assert!(manifest.partition == self.partition);
        self.lost.set(false);
        *self.state.borrow_mut() = State {
            manifest,
            version,
            loaded: true,
        };
        Ok(())
    }

    /// Whether the store's manifest is missing while the partition has a history.
    pub fn is_lost(&self) -> bool {
        self.lost.get()
    }

    /// Whether a rebuilt manifest was installed since the last call.
    pub fn take_rebuilt(&self) -> bool {
        self.rebuilt.replace(false)
    }

    /// Refuses a rebuild while the store holds a manifest (it is not lost).
    pub async fn refuse_rebuild_if_present(&self) -> Result<(), RemoteError> {
        let key = self.manifest_key();
        match self.store.get(self.store.key(&key)).await {
            Ok(_) => Err(RemoteError::Refused {
                key,
                why: "it is in the bucket: there is nothing to rebuild".into(),
            }),
            Err(RemoteError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Writes a manifest rebuilt from the segment objects, only if the store still has
    /// none (create-only), and takes it as the partition's remote tier.
    pub async fn install_rebuilt(
        &self,
        mut manifest: PartitionManifest,
    ) -> Result<(), RemoteError> {
        let key = self.manifest_key();
        self.refuse_change()?;
        self.stamp(&mut manifest)?;
        assert!(
            manifest.writer == *self.writer && manifest.partition == self.partition,
            "a rebuilt manifest is this node's, for this partition"
        );
        let _turn = self
            .turn
            .acquire_permit(1)
            .await
            .map_err(|e| RemoteError::Unavailable(e.to_string()))?;
        let written = self
            .store
            .put_if(self.store.key(&key), manifest.to_bytes(), None);
        let version = match written.await {
            Err(RemoteError::AlreadyExists(_) | RemoteError::Conflict(_)) => {
                let why = "a manifest appeared while it was rebuilt; it was kept".into();
                return Err(RemoteError::Refused { key, why });
            }
            other => other?,
        };
        self.lost.set(false);
        self.rebuilt.set(true);
        *self.state.borrow_mut() = State {
            manifest,
            version: Some(version),
            loaded: true,
        };
        Ok(())
    }

    /// A missing manifest means a new partition only if it never uploaded: not when this
    /// process wrote or read one, and not when segment objects are in the bucket while
    /// local segments were already deleted (they go only once a manifest holds them).
    async fn refuse_lost_history(&self, key: &str) -> Result<(), RemoteError> {
        let known = {
            let state = self.state.borrow();
            state.version.is_some() || !state.manifest.segments.is_empty()
        };
        // A follower judges only what it knew: objects may be the leader's copy in flight.
        if self.role.get() == WriterRole::Follower && !known {
            return Ok(());
        }
        let dir = keys::partition_dir(&self.topic, self.partition);
        let objects = self.store.list_keys(&dir, usize::MAX).await?;
        let objects = objects.iter().filter(|k| !k.ends_with(".json")).count();
        // Local segments are deleted only once a manifest holds them: objects without a
        // manifest while the local log starts past 0 are a lost history, while objects of a
        // first upload cut short (local start still 0) are orphans the sweep removes.
        if known || (objects > 0 && self.local_start.get() > 0) {
            self.lost.set(true);
            return Err(RemoteError::ManifestMissing {
                key: key.to_string(),
                objects,
            });
        }
        Ok(())
    }

    /// Applies `change` to the current manifest and writes it if the store still holds the
    /// version read (the commit point). A lost race or an unknown outcome makes the next
    /// use read the manifest again.
    pub async fn commit(
        &self,
        change: impl FnOnce(&mut PartitionManifest),
    ) -> Result<PartitionManifest, RemoteError> {
        self.refuse_change()?;
        let _turn = self
            .turn
            .acquire_permit(1)
            .await
            .map_err(|e| RemoteError::Unavailable(e.to_string()))?;
        let mut next = self.current().await?;
        let version = self.state.borrow().version.clone();
        self.stamp(&mut next)?;
        change(&mut next);
        let key = self.manifest_key();
        match self
            .store
            .put_if(self.store.key(&key), next.to_bytes(), version)
            .await
        {
            Ok(v) => {
                *self.state.borrow_mut() = State {
                    manifest: next.clone(),
                    version: Some(v),
                    loaded: true,
                };
                Ok(next)
            }
            Err(RemoteError::Conflict(_) | RemoteError::AlreadyExists(_)) => {
                self.state.borrow_mut().loaded = false;
                // A manifest that vanished is a lost history, not another writer.
                if let Err(lost @ RemoteError::ManifestMissing { .. }) = self.reload().await {
                    return Err(lost);
                }
                Err(RemoteError::Refused {
                    key,
                    why: "changed by another writer since it was read".into(),
                })
            }
            Err(other) => {
                self.state.borrow_mut().loaded = false;
                Err(other)
            }
        }
    }

    /// The first offset the partition serves, counting both tiers.
    pub fn log_start(&self, local_start: i64) -> i64 {
        let state = self.state.borrow();
        match state.manifest.start_offset() {
            Some(remote) => remote.min(local_start),
            None => local_start,
        }
    }

    /// Both tiers as DescribeLogs reports them, from the manifest as last known.
    pub fn info(&self, upload_lag_bytes: u64, local_start: i64) -> crate::protocol::RemoteLogInfo {
        let state = self.state.borrow();
        let m = &state.manifest;
        crate::protocol::RemoteLogInfo {
            local_log_start_offset: local_start,
            remote_log_start_offset: m.start_offset().unwrap_or(-1),
            remote_size_bytes: m.size_bytes() as i64,
            remote_segments: m.segments.len() as i32,
            upload_lag_bytes: upload_lag_bytes as i64,
            state: match self.lost.get() {
                true => crate::protocol::ErrorCode::RemoteManifestMissing,
                false => crate::protocol::ErrorCode::None,
            },
        }
    }

    /// Whether `offset` lies in the remote tier only (below the local log's start).
    pub fn serves(&self, offset: i64) -> bool {
        let local = self.local_start.get();
        offset < local
            && self
                .state
                .borrow()
                .manifest
                .start_offset()
                .is_some_and(|start| offset >= start)
    }

    /// Moves the partition's log start (DeleteRecords) in the manifest too.
    pub async fn advance_log_start(&self, offset: i64) -> Result<(), RemoteError> {
        if self.manifest().await?.log_start_offset >= offset {
            return Ok(());
        }
        self.commit(|m| m.log_start_offset = m.log_start_offset.max(offset))
            .await
            .map(|_| ())
    }
}
