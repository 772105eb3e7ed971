//! `shardlog log-dirs`: like kafka-log-dirs --describe, every partition's size as JSON (one
//! broker, one log directory, named by its absolute path as Kafka's `logDir`), with
//! shardlog's extras: log start and end offsets, segment count, owner shard, the disk's
//! total and usable bytes, and for a compacted topic the cleaner's view (why it will or
//! will not clean the partition now).

use std::io::Write;

use serde_json::{json, Value};

use crate::protocol::{CleanerInfo, ErrorCode, PartitionLogInfo};

pub async fn run(
    server: &super::ServerAddr,
    topics: Option<Vec<String>>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut client = super::connect(server).await?;
    let logs = client
        .describe_logs(topics)
        .await
        .map_err(|e| e.to_string())?;
    let mut partitions = Vec::new();
    for t in &logs.topics {
        if t.error_code != ErrorCode::None {
            return Err(format!("topic {:?} does not exist", t.name));
        }
        partitions.extend(t.partitions.iter().map(|p| partition_json(&t.name, p)));
    }
    let doc = json!({
        "version": 1,
        "brokers": [{
            "broker": 0,
            "logDirs": [{
                "logDir": logs.log_dir,
                "error": null,
                "totalBytes": logs.total_bytes,
                "usableBytes": logs.usable_bytes,
                "partitions": partitions,
            }],
        }],
    });
    writeln!(out, "{doc}").map_err(|e| e.to_string())
}

fn partition_json(topic: &str, p: &PartitionLogInfo) -> Value {
    let mut doc = json!({
        "partition": format!("{topic}-{}", p.partition),
        "size": p.size_bytes,
        "offsetLag": 0,
        "isFuture": false,
        "logStartOffset": p.log_start_offset,
        "logEndOffset": p.log_end_offset,
        "segments": p.segments,
        "ownerShard": p.owner_shard,
    });
    if let Some(cleaner) = cleaner_json(&p.cleaner) {
        doc["cleaner"] = cleaner;
    }
    let r = &p.remote;
    if r.local_log_start_offset >= 0 {
        // Tiered: `size` is the local copy's; the remote tier apart.
        doc["remote"] = json!({
            "localLogStartOffset": r.local_log_start_offset,
            "remoteLogStartOffset": (r.remote_log_start_offset >= 0).then_some(r.remote_log_start_offset),
            "remoteSize": r.remote_size_bytes,
            "remoteSegments": r.remote_segments,
            "uploadLagBytes": r.upload_lag_bytes,
            "state": remote_state(r.state),
        });
    }
    doc
}

/// The remote tier's state in words: what is wrong and what to do.
fn remote_state(state: crate::protocol::ErrorCode) -> String {
    match state {
        crate::protocol::ErrorCode::None => "ok".into(),
        crate::protocol::ErrorCode::RemoteManifestMissing => "MANIFEST_MISSING: the manifest is gone from the bucket while segment objects are there; uploads and remote retention are stopped (restore the object, or `shardlog topics rebuild-manifest`)".into(),
        other => format!("{other:?}"),
    }
}

/// A compacted partition's cleaner state: the dirty ratio the cleaner compares with
/// min.cleanable.dirty.ratio, its inputs, and whether it cleans at its next check.
fn cleaner_json(c: &CleanerInfo) -> Option<Value> {
    let ratio = c.dirty_ratio()?;
    Some(json!({
        "firstDirtyOffset": c.first_dirty_offset,
        "dirtyRatio": (ratio * 10_000.0).round() / 10_000.0,
        "dirtyBytes": c.dirty_bytes,
        "cleanBytes": c.clean_bytes,
        "uncleanableBytes": c.uncleanable_bytes,
        "due": c.due,
        // Epoch ms of the last cleaning since the server started (null: none).
        "lastCleanedMs": (c.last_cleaned_ms >= 0).then_some(c.last_cleaned_ms),
    }))
}
