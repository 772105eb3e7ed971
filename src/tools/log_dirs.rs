//! `shardlog log-dirs`: like kafka-log-dirs --describe, every partition's size as JSON (one
//! log directory per broker, named by its absolute path as Kafka's `logDir`), with
//! shardlog's extras: log start and end offsets, segment count, owner shard, the disk's
//! total and usable bytes, and for a compacted topic the cleaner's view (why it will or
//! will not clean the partition now). On a cluster, as Kafka's tool, every live broker (or
//! those of `--brokers`) with the replicas it holds, found through the native
//! ClusterMetadata and asked of each node.

use std::io::Write;

use serde_json::{json, Value};

use crate::client::Client;
use crate::protocol::{
    CleanerInfo, ClusterMetadataResponse, ErrorCode, LogDirInfo, PartitionLogInfo,
};

pub async fn run(
    server: &super::ServerAddr,
    (topics, brokers): (Option<Vec<String>>, Option<Vec<i32>>),
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut home = super::connect(server).await?;
    let cluster = super::leaders::cluster_of(&mut home, topics.clone()).await?;
    let mut entries = Vec::new();
    for (id, addr) in nodes_of(cluster.as_ref(), brokers.as_deref())? {
        let logs = match addr {
            None => describe(&mut home, topics.clone()).await?,
            Some(addr) => {
                describe(
                    &mut super::connect_one(&addr, server).await?,
                    topics.clone(),
                )
                .await?
            }
        };
        entries.push(broker_json(id, &logs, cluster.as_ref())?);
    }
    let doc = json!({ "version": 1, "brokers": entries });
    writeln!(out, "{doc}").map_err(|e| e.to_string())
}

/// The brokers to describe: (id, None for the node reached or its native listener).
fn nodes_of(
    cluster: Option<&ClusterMetadataResponse>,
    wanted: Option<&[i32]>,
) -> Result<Vec<(i32, Option<String>)>, String> {
    let Some(cluster) = cluster else {
        return Ok(vec![(0, None)]);
    };
    let listed = cluster.nodes.iter().map(|n| {
        let addr = (n.node_id != cluster.node_id).then(|| format!("{}:{}", n.host, n.port));
        (n.node_id, addr)
    });
    let chosen: Vec<(i32, Option<String>)> = listed
        .filter(|(id, _)| wanted.is_none_or(|w| w.contains(id)))
        .collect();
    if let Some(missing) = wanted
        .into_iter()
        .flatten()
        .find(|w| !chosen.iter().any(|(id, _)| id == *w))
    {
        return Err(format!(
            "--brokers: broker {missing} is not a live broker of this cluster"
        ));
    }
    Ok(chosen)
}

async fn describe(client: &mut Client, topics: Option<Vec<String>>) -> Result<LogDirInfo, String> {
    client
        .describe_logs(topics)
        .await
        .map_err(|e| e.to_string())
}

/// One broker's entry: its log directory and the partitions it holds a replica of (on a
/// cluster, a node keeps an empty copy of every partition it does not replicate: left out).
fn broker_json(
    broker: i32,
    logs: &LogDirInfo,
    cluster: Option<&ClusterMetadataResponse>,
) -> Result<Value, String> {
    let holds = |topic: &str, p: i32| {
        let Some(cluster) = cluster else { return true };
        let placed = cluster
            .topic(topic)
            .and_then(|t| t.partitions.get(p as usize));
        // A topic the cluster does not have (an internal one, each node's own) is held.
        placed.is_none_or(|p| p.replicas.contains(&broker))
    };
    let mut partitions = Vec::new();
    for t in &logs.topics {
        if t.error_code != ErrorCode::None {
            return Err(format!("topic {:?} does not exist", t.name));
        }
        let held = t.partitions.iter().filter(|p| holds(&t.name, p.partition));
        partitions.extend(held.map(|p| partition_json(&t.name, p)));
    }
    Ok(json!({
        "broker": broker,
        "logDirs": [{
            "logDir": logs.log_dir,
            "error": null,
            "totalBytes": logs.total_bytes,
            "usableBytes": logs.usable_bytes,
            "partitions": partitions,
        }],
    }))
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
