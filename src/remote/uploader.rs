//! The uploader of one shard: every `remote.upload.interval.ms`, each tiered partition the
//! shard owns copies its newly sealed segments and applies remote retention, and partition
//! 0 of each topic keeps the topic's description in the bucket. On a read replica the pass
//! only re-reads the manifests.

use std::rc::Rc;
use std::time::Duration;

use crate::io::deadline::before;
use crate::remote::host::{TieringHost, TieringView};
use crate::remote::{self, RemoteError, RemoteLog};
use crate::topic_partition::TopicPartition;

/// Longest pause between upload attempts of a partition whose uploads fail.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

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
/// `PASS_SHARE`), then remote retention. True when segments are left to copy.
async fn upload_pass(
    host: &dyn TieringHost,
    tp: &TopicPartition,
    remote: &RemoteLog,
) -> Result<bool, RemoteError> {
    if host.settings().remote_read_replica {
        return remote.reload().await.map(|()| false);
    }
    let Some(meta) = host.topic(&tp.topic) else {
        return Ok(false);
    };
    if tp.partition == 0 {
        describe_topic(remote, &meta).await?;
    }
    if !remote.swept.get() {
        remote::upload::sweep_orphans(remote).await?;
        remote.swept.set(true);
    }
    let started = std::time::Instant::now();
    let Some(mut view) = tiering_view(host, tp, remote).await? else {
        return Ok(false);
    };
    while !view.to_copy.is_empty() && started.elapsed() < PASS_SHARE {
        for seg in std::mem::take(&mut view.to_copy) {
            if host.shutting_down() {
                return Ok(false);
            }
            let bytes = remote::upload::copy_segment(remote, host.storage(), &seg).await?;
            crate::metrics::record_remote(|m| {
                m.uploaded_bytes += bytes;
                m.uploaded_segments += u64::from(bytes > 0);
            });
            // Tells the partition its new copied end (local retention may delete below it).
            match tiering_view(host, tp, remote).await? {
                Some(next) => view = next,
                None => return Ok(false),
            }
        }
    }
    remote::expire::expire(
        remote,
        &meta.config.log,
        crate::time::now_ms(),
        view.local_only_bytes,
    )
    .await?;
    Ok(!view.to_copy.is_empty())
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

/// The partition's segments to copy, after telling it what the remote tier holds; `None`
/// when the partition is gone or closing.
async fn tiering_view(
    host: &dyn TieringHost,
    tp: &TopicPartition,
    remote: &RemoteLog,
) -> Result<Option<TieringView>, RemoteError> {
    let manifest = remote.manifest().await?;
    let copied = manifest.next_offset().unwrap_or(manifest.log_start_offset);
    let Some(view) = host.tiering_view(tp, copied).await else {
        return Ok(None);
    };
    // What to copy continues the remote tier, oldest first, without overlaps: a gap or an
    // overlap here would put a hole or a duplicate into the manifest.
    assert!(view.to_copy.iter().all(|s| s.base_offset >= copied));
    assert!(view
        .to_copy
        .windows(2)
        .all(|w| w[0].last_offset < w[1].base_offset));
    remote.local_start.set(view.local_start);
    remote.upload_lag_bytes.set(view.local_only_bytes);
    Ok(Some(view))
}
