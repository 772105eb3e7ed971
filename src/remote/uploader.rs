//! The uploader of one shard: every `remote.upload.interval.ms`, each tiered partition the
//! shard owns copies its newly sealed segments and applies remote retention, and partition
//! 0 of each topic keeps the topic's description in the bucket. On a read replica the pass
//! only re-reads the manifests.

use std::rc::Rc;
use std::time::Duration;

use crate::io::deadline::before;
use crate::remote::host::{TieringHost, TieringView};
use crate::remote::partition::WriterRole;
use crate::remote::{self, RemoteError, RemoteLog};
use crate::topic_partition::TopicPartition;

/// Longest pause between upload attempts of a partition whose uploads fail.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Segments one look at a partition takes to copy.
const COPY_BATCH: usize = 4;

/// How long one partition's copies may hold a shard's uploader in one pass before the next
/// partition's turn (a backlog goes on in the next pass, which starts at once).
const PASS_SHARE: Duration = Duration::from_secs(10);

/// The uploader of one shard: every `remote.upload.interval.ms`, each tiered partition it
/// owns copies its newly sealed segments and applies remote retention; while a backlog is
/// left (the store was away, the writers outran it), the next pass starts at once. A
/// partition whose store fails backs off (doubling, at most a minute); the others go on.
pub async fn upload_loop(host: Rc<dyn TieringHost>) {
    let every = Duration::from_millis(host.settings().remote_upload_interval_ms);
    let shutdown = host.shutdown_listener();
    let mut backoff: std::collections::HashMap<TopicPartition, (u32, std::time::Instant)> =
        Default::default();
    let mut wait = every;
    while before(wait, shutdown.recv()).await.is_none() {
        wait = every;
        for (tp, remote) in host.tiered_partitions() {
            if host.shutting_down() {
                return;
            }
            if remote.take_rebuilt() {
                backoff.remove(&tp);
            }
            if backoff
                .get(&tp)
                .is_some_and(|(_, until)| std::time::Instant::now() < *until)
            {
                continue;
            }
            match upload_pass(&*host, &tp, &remote).await {
                Ok(backlog) => {
                    backoff.remove(&tp);
                    if backlog {
                        wait = Duration::ZERO;
                    }
                }
                Err(e) => {
                    let failures = backoff.get(&tp).map_or(0, |(n, _)| *n) + 1;
                    let pause = (every * 2u32.saturating_pow(failures.min(10))).min(MAX_BACKOFF);
                    let retry_in_ms = pause.as_millis() as u64;
                    if let RemoteError::ManifestMissing { .. } = e {
                        tracing::error!(partition = %tp, error = %e, retry_in_ms, "remote tier history lost: uploads and remote retention stopped");
                        crate::metrics::record_remote(|m| m.manifest_missing += 1);
                    } else {
                        tracing::warn!(partition = %tp, error = %e, retry_in_ms, "remote tier pass failed");
                    }
                    crate::metrics::record_remote(|m| m.failed_passes += 1);
                    backoff.insert(tp, (failures, std::time::Instant::now() + pause));
                }
            }
        }
    }
}

/// One partition's pass: copy what is sealed and not yet remote (for at most
/// `PASS_SHARE`), then remote retention. True when segments are left to copy. In a cluster
/// only the partition's leader does this; a follower only learns what was copied.
async fn upload_pass(
    host: &dyn TieringHost,
    tp: &TopicPartition,
    remote: &RemoteLog,
) -> Result<bool, RemoteError> {
    if host.settings().remote_read_replica {
        return remote.reload().await.map(|()| false);
    }
    remote.set_role(host.writer_role(tp));
    if remote.role() == WriterRole::Follower {
        return follow(host, tp, remote).await.map(|()| false);
    }
    let Some(meta) = host.topic(&tp.topic) else {
        return Ok(false);
    };
    claim(remote).await?;
    if tp.partition == 0 {
        describe_topic(remote, &meta).await?;
    }
    if !remote.swept.get() {
        remote::upload::sweep_orphans(remote).await?;
        remote.swept.set(true);
    }
    let Some(view) = copy_sealed(host, tp, remote).await? else {
        return Ok(false);
    };
    remote::expire::expire(
        remote,
        &meta.config.log,
        crate::time::now_ms(),
        view.local_only_bytes,
    )
    .await?;
    Ok(!view.to_copy.is_empty())
}

/// Copies the sealed segments not yet remote, oldest first, for at most `PASS_SHARE`:
/// the partition's view after the last copy (`None`: the partition is gone or closing).
async fn copy_sealed(
    host: &dyn TieringHost,
    tp: &TopicPartition,
    remote: &RemoteLog,
) -> Result<Option<TieringView>, RemoteError> {
    let started = std::time::Instant::now();
    let Some(mut view) = tiering_view(host, tp, remote, COPY_BATCH).await? else {
        return Ok(None);
    };
    while !view.to_copy.is_empty() && started.elapsed() < PASS_SHARE {
        for seg in std::mem::take(&mut view.to_copy) {
            if host.shutting_down() {
                return Ok(None);
            }
            let bytes = remote::upload::copy_segment(remote, host.storage(), &seg).await?;
            crate::metrics::record_remote(|m| {
                m.uploaded_bytes += bytes;
                m.uploaded_segments += u64::from(bytes > 0);
            });
            // Tells the partition its new copied end (local retention may delete below it).
            match tiering_view(host, tp, remote, COPY_BATCH).await? {
                Some(next) => view = next,
                None => return Ok(None),
            }
        }
    }
    Ok(Some(view))
}

/// A new leader stamps the manifest with its leader epoch before anything else, so the
/// deposed leader's commits fail from then on (Kafka fences remote writes by leader epoch
/// too); only then may it sweep orphans, as no copy of the old leader can commit any more.
async fn claim(remote: &RemoteLog) -> Result<(), RemoteError> {
    let WriterRole::Leader(epoch) = remote.role() else {
        return Ok(());
    };
    if remote.manifest().await?.leader_epoch == Some(epoch) {
        return Ok(());
    }
    let claimed = remote.commit(|_| {}).await?;
    assert_eq!(claimed.leader_epoch, Some(epoch));
    tracing::info!(topic = %remote.topic, partition = remote.partition, leader_epoch = epoch, next_offset = ?claimed.next_offset(), "took over the partition's remote tier as its leader");
    Ok(())
}

/// A follower's pass: reads what the leader copied, so that its local retention deletes
/// only what the remote tier holds (and the remote reads it serves stay current).
async fn follow(
    host: &dyn TieringHost,
    tp: &TopicPartition,
    remote: &RemoteLog,
) -> Result<(), RemoteError> {
    remote.reload().await?;
    tiering_view(host, tp, remote, 0).await.map(|_| ())
}

/// Writes the topic's description (partitions, configs set on it) to the bucket when it
/// changed: what restore and read replicas recreate the topic from.
async fn describe_topic(
    remote: &RemoteLog,
    meta: &crate::catalog::topics::TopicMeta,
) -> Result<(), RemoteError> {
    let described = remote::manifest::TopicManifest {
        format: remote::manifest::FORMAT_VERSION,
        writer: remote.writer().to_string(),
        topic: meta.name.clone(),
        partitions: meta.partitions(),
        configs: meta
            .config
            .overrides
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    if remote.described.borrow().as_ref() == Some(&described) {
        return Ok(());
    }
    remote::restore::write_topic(&remote.store, &described).await?;
    *remote.described.borrow_mut() = Some(described);
    Ok(())
}

/// The partition's segments to copy (at most `copy_limit`), after telling it what the
/// remote tier holds; `None` when the partition is gone or closing.
async fn tiering_view(
    host: &dyn TieringHost,
    tp: &TopicPartition,
    remote: &RemoteLog,
    copy_limit: usize,
) -> Result<Option<TieringView>, RemoteError> {
    let manifest = remote.manifest().await?;
    let copied = manifest.next_offset().unwrap_or(manifest.log_start_offset);
    let Some(view) = host
        .tiering_view(tp, copied, copy_limit)
        .await
        .transpose()?
    else {
        return Ok(None);
    };
    // What to copy continues the remote tier, oldest first, without overlaps: a gap or an
    // overlap here would put a hole or a duplicate into the manifest. Only a first copy
    // may start below the log start (in the batch holding it).
    if let Some(first) = view.to_copy.first() {
        let continues = first.base_offset == copied
            || (manifest.segments.is_empty() && first.base_offset < copied);
        if !continues {
            return Err(RemoteError::Local(format!(
                "{tp}: the local log's next segment to copy starts at {}, not at the remote tier's end {copied} (its batches do not line up with the remote tier's)",
                first.base_offset
            )));
        }
    }
    assert!(view
        .to_copy
        .windows(2)
        .all(|w| w[0].last_offset < w[1].base_offset));
    remote.local_start.set(view.local_start);
    remote.upload_lag_bytes.set(view.local_only_bytes);
    Ok(Some(view))
}
