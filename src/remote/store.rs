//! The object store, reached from the shards. `object_store`'s futures need tokio (its
//! retries sleep on tokio timers, its HTTP client is hyper on tokio), and a shard's thread
//! runs glommio, so the store lives on one I/O thread of its own with a current-thread
//! tokio runtime. A shard sends it a request over a lock-free unbounded channel (tokio's
//! `mpsc`, an atomic list of blocks) and awaits the answer on a oneshot, which any executor
//! can await (it wakes through the waker it was polled with). Nothing else is shared: the
//! store itself never leaves the I/O thread.

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use tokio::sync::{mpsc, oneshot};

use super::error::RemoteError;

/// One request, run on the I/O thread with the store.
type Job = Box<dyn FnOnce(Arc<dyn ObjectStore>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// How long one request may take, retries included, before it is reported unavailable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// A version of an object that a conditional write may replace (S3's ETag).
pub type Version = UpdateVersion;

/// The shards' handle on the object store (cheap to clone; one per shard).
#[derive(Clone)]
pub struct RemoteStore {
    jobs: mpsc::UnboundedSender<Job>,
    /// Where the store's keys start (`s3://bucket/PREFIX`): every key is below it.
    prefix: ObjectPath,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteStore({})", self.prefix)
    }
}

impl RemoteStore {
    /// Starts the I/O thread serving `store`; it ends when every handle is dropped.
    pub fn start(store: Arc<dyn ObjectStore>, prefix: ObjectPath) -> std::io::Result<Self> {
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("shardlog-remote".into())
            .spawn(move || {
                runtime.block_on(async move {
                    while let Some(job) = rx.recv().await {
                        tokio::spawn(job(store.clone()));
                    }
                })
            })?;
        Ok(RemoteStore { jobs, prefix })
    }

    /// The full key of `rel` below the store's prefix.
    pub fn key(&self, rel: &str) -> ObjectPath {
        let mut key = self.prefix.clone();
        for part in rel.split('/') {
            key = key.clone().join(part);
        }
        key
    }

    /// Runs `op` with the store on the I/O thread, within the request timeout.
    async fn run<T, F, Fut>(&self, what: &'static str, op: F) -> Result<T, RemoteError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<dyn ObjectStore>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, object_store::Error>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |store| {
            Box::pin(async move {
                let started = std::time::Instant::now();
                let out = match tokio::time::timeout(REQUEST_TIMEOUT, op(store)).await {
                    Ok(r) => r.map_err(|e| RemoteError::from_store(what, e)),
                    Err(_) => Err(RemoteError::Unavailable(format!(
                        "{what}: no answer within {REQUEST_TIMEOUT:?}"
                    ))),
                };
                let elapsed_us = started.elapsed().as_micros() as u64;
                tracing::debug!(what, elapsed_us, ok = out.is_ok(), "object store request");
                let _ = tx.send(out);
            })
        });
        self.jobs
            .send(job)
            .map_err(|_| RemoteError::Unavailable("the object store's thread ended".into()))?;
        rx.await
            .map_err(|_| RemoteError::Unavailable(format!("{what}: the request was dropped")))?
    }

    /// Writes a new object; `AlreadyExists` if the key is taken (keys of data objects are
    /// unique per upload, so this never replaces data a manifest names).
    pub async fn put_new(&self, key: ObjectPath, data: Bytes) -> Result<(), RemoteError> {
        self.run("put", move |s| async move {
            let opts = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            s.put_opts(&key, PutPayload::from_bytes(data), opts).await
        })
        .await
        .map(|_| ())
    }

    /// Writes `data` if the object is still at `expected` (`None`: if it does not exist);
    /// returns the new version. The commit point of a manifest change.
    pub async fn put_if(
        &self,
        key: ObjectPath,
        data: Bytes,
        expected: Option<Version>,
    ) -> Result<Version, RemoteError> {
        self.run("conditional put", move |s| async move {
            let mode = match expected {
                Some(v) => PutMode::Update(v),
                None => PutMode::Create,
            };
            let opts = PutOptions {
                mode,
                ..Default::default()
            };
            s.put_opts(&key, PutPayload::from_bytes(data), opts).await
        })
        .await
        .map(Version::from)
    }

    /// Replaces an object whatever it held (a topic's description, rewritten whole).
    pub async fn put_overwrite(&self, key: ObjectPath, data: Bytes) -> Result<(), RemoteError> {
        self.run("put", move |s| async move {
            s.put(&key, PutPayload::from_bytes(data)).await
        })
        .await
        .map(|_| ())
    }

    /// A whole object with its version.
    pub async fn get(&self, key: ObjectPath) -> Result<(Bytes, Version), RemoteError> {
        self.run("get", move |s| async move {
            let got = s.get(&key).await?;
            let version = Version {
                e_tag: got.meta.e_tag.clone(),
                version: got.meta.version.clone(),
            };
            Ok((got.bytes().await?, version))
        })
        .await
    }

    /// Bytes `range` of an object (a ranged GET).
    pub async fn get_range(
        &self,
        key: ObjectPath,
        range: Range<u64>,
    ) -> Result<Bytes, RemoteError> {
        self.run("ranged get", move |s| async move {
            s.get_range(&key, range).await
        })
        .await
    }

    /// Deletes an object; one already gone is not an error.
    pub async fn delete(&self, key: ObjectPath) -> Result<(), RemoteError> {
        match self
            .run("delete", move |s| async move { s.delete(&key).await })
            .await
        {
            Err(RemoteError::NotFound(_)) => Ok(()),
            other => other,
        }
    }

    /// The keys below `rel` (one level: topic names below the prefix, say).
    pub async fn list_dirs(&self, rel: &str) -> Result<Vec<String>, RemoteError> {
        let prefix = if rel.is_empty() {
            self.prefix.clone()
        } else {
            self.key(rel)
        };
        self.run("list", move |s| async move {
            let listed = s.list_with_delimiter(Some(&prefix)).await?;
            Ok(listed
                .common_prefixes
                .iter()
                .filter_map(|p| p.filename().map(String::from))
                .collect())
        })
        .await
    }

    /// Every key below `rel` (recursively), relative to the store's prefix; at most `limit`.
    pub async fn list_keys(&self, rel: &str, limit: usize) -> Result<Vec<String>, RemoteError> {
        let listed = self.list_objects(rel, limit).await?;
        Ok(listed.into_iter().map(|(key, _)| key).collect())
    }

    /// Every object below `rel` (recursively) as (key relative to the store's prefix,
    /// size in bytes); at most `limit`.
    pub async fn list_objects(
        &self,
        rel: &str,
        limit: usize,
    ) -> Result<Vec<(String, u64)>, RemoteError> {
        let (prefix, root) = (self.key(rel), self.prefix.clone());
        self.run("list", move |s| async move {
            use futures_lite::StreamExt;
            let mut listed = s.list(Some(&prefix)).take(limit);
            let mut objects = Vec::new();
            while let Some(meta) = listed.next().await {
                let meta = meta?;
                let rel: Vec<String> = match meta.location.prefix_match(&root) {
                    Some(parts) => parts.map(|p| p.as_ref().to_string()).collect(),
                    None => continue,
                };
                objects.push((rel.join("/"), meta.size));
            }
            Ok(objects)
        })
        .await
    }

    /// Starts a multipart upload of a new object; its parts may be in flight together.
    pub fn multipart(&self, key: ObjectPath) -> Result<MultipartWriter, RemoteError> {
        let (parts, mut rx) = mpsc::unbounded_channel::<PartMsg>();
        let job: Job = Box::new(move |store| {
            Box::pin(async move {
                let upload = match store.put_multipart(&key).await {
                    Ok(u) => u,
                    Err(e) => {
                        fail_parts(&mut rx, RemoteError::from_store("multipart start", e)).await;
                        return;
                    }
                };
                run_multipart(upload, rx).await;
            })
        });
        self.jobs
            .send(job)
            .map_err(|_| RemoteError::Unavailable("the object store's thread ended".into()))?;
        Ok(MultipartWriter { parts })
    }
}

/// A message to a multipart upload on the I/O thread.
enum PartMsg {
    Part(Bytes, oneshot::Sender<Result<(), RemoteError>>),
    Complete(oneshot::Sender<Result<(), RemoteError>>),
}

/// Answers every later message with the error that ended the upload.
async fn fail_parts(rx: &mut mpsc::UnboundedReceiver<PartMsg>, e: RemoteError) {
    while let Some(msg) = rx.recv().await {
        let (PartMsg::Part(_, ack) | PartMsg::Complete(ack)) = msg;
        let _ = ack.send(Err(e.clone()));
    }
}

/// Uploads the parts as they come, each as its own task so several are in flight (their
/// order is the order they came in); completes on `Complete` once every part is in, aborts
/// when a part failed or the writer goes without completing (no half object ever appears).
async fn run_multipart(
    mut upload: Box<dyn object_store::MultipartUpload>,
    mut rx: mpsc::UnboundedReceiver<PartMsg>,
) {
    let mut parts = Vec::new();
    while let Some(msg) = rx.recv().await {
        match msg {
            PartMsg::Part(data, ack) => {
                let put = upload.put_part(PutPayload::from_bytes(data));
                parts.push(tokio::spawn(async move {
                    let r = match tokio::time::timeout(REQUEST_TIMEOUT, put).await {
                        Ok(r) => r.map_err(|e| RemoteError::from_store("multipart part", e)),
                        Err(_) => Err(RemoteError::Unavailable("multipart part timed out".into())),
                    };
                    let _ = ack.send(r.clone());
                    r
                }));
            }
            PartMsg::Complete(ack) => {
                let r = match all_parts(std::mem::take(&mut parts)).await {
                    Ok(()) => upload
                        .complete()
                        .await
                        .map(|_| ())
                        .map_err(|e| RemoteError::from_store("multipart complete", e)),
                    Err(e) => Err(e),
                };
                if r.is_err() {
                    let _ = upload.abort().await;
                }
                let _ = ack.send(r);
                fail_parts(
                    &mut rx,
                    RemoteError::Unavailable("the multipart upload ended".into()),
                )
                .await;
                return;
            }
        }
    }
    let _ = all_parts(parts).await;
    let _ = upload.abort().await;
}

/// Waits for every part in flight; the first failure, if any.
async fn all_parts(
    parts: Vec<tokio::task::JoinHandle<Result<(), RemoteError>>>,
) -> Result<(), RemoteError> {
    let mut outcome = Ok(());
    for part in parts {
        let r = part
            .await
            .unwrap_or_else(|_| Err(RemoteError::Unavailable("a part's upload ended".into())));
        if outcome.is_ok() {
            outcome = r;
        }
    }
    outcome
}

/// The shard's end of a multipart upload: parts in order, then `complete`.
pub struct MultipartWriter {
    parts: mpsc::UnboundedSender<PartMsg>,
}

impl MultipartWriter {
    fn gone() -> RemoteError {
        RemoteError::Unavailable("the multipart upload ended".into())
    }

    /// Starts uploading one part (at least 5 MiB, except the last): parts go in the order
    /// they are started, several at once; the future ends when the store holds this one.
    pub fn part(&self, data: Bytes) -> impl Future<Output = Result<(), RemoteError>> + 'static {
        let (ack, rx) = oneshot::channel();
        let sent = self.parts.send(PartMsg::Part(data, ack));
        async move {
            sent.map_err(|_| Self::gone())?;
            rx.await.map_err(|_| Self::gone())?
        }
    }

    /// Makes the object appear, whole.
    pub async fn complete(self) -> Result<(), RemoteError> {
        let (ack, rx) = oneshot::channel();
        self.parts
            .send(PartMsg::Complete(ack))
            .map_err(|_| Self::gone())?;
        rx.await.map_err(|_| Self::gone())?
    }
}
