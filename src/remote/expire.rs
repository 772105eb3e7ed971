//! Retention of the remote tier (Kafka's RLM expiration task): remote segments wholly
//! below the log start go, and with a delete policy those older than retention.ms and the
//! oldest beyond retention.bytes, counted over the whole log (remote plus what only the
//! local tier holds). The manifest without them is written first (the commit point), then
//! their objects are deleted.

use super::error::RemoteError;
use super::manifest::{PartitionManifest, RemoteSegment};
use super::partition::RemoteLog;
use super::upload::remove_objects;
use crate::config::LogConfig;

/// How many of the oldest remote segments retention removes now.
pub fn expired_count(
    m: &PartitionManifest,
    config: &LogConfig,
    now_ms: i64,
    local_only_bytes: u64,
) -> usize {
    let below_start = m
        .segments
        .iter()
        .take_while(|s| s.last_offset < m.log_start_offset)
        .count();
    if !config.cleanup_policy.deletes() {
        return below_start;
    }
    let mut n = below_start;
    if config.retention_ms >= 0 {
        let old = |s: &RemoteSegment| now_ms - s.max_timestamp_ms > config.retention_ms;
        n = n.max(m.segments.iter().take_while(|s| old(s)).count());
    }
    if config.retention_bytes >= 0 {
        let mut excess = (m.size_bytes() + local_only_bytes) as i64 - config.retention_bytes;
        let by_size = m
            .segments
            .iter()
            .take_while(|s| {
                excess -= s.size_bytes as i64;
                excess >= 0
            })
            .count();
        n = n.max(by_size);
    }
    assert!(
        n <= m.segments.len(),
        "{n} of {} segments expire",
        m.segments.len()
    );
    n
}

/// Removes the expired remote segments; returns how many went.
pub async fn expire(
    log: &RemoteLog,
    config: &LogConfig,
    now_ms: i64,
    local_only_bytes: u64,
) -> Result<usize, RemoteError> {
    let m = log.manifest().await?;
    let n = expired_count(&m, config, now_ms, local_only_bytes);
    if n == 0 {
        return Ok(0);
    }
    let gone: Vec<RemoteSegment> = m.segments[..n].to_vec();
    let new_start = gone.last().map_or(0, |s| s.last_offset + 1);
    let committed = log
        .commit(|m| {
            m.segments.retain(|s| s.last_offset >= new_start);
            m.log_start_offset = m.log_start_offset.max(new_start);
        })
        .await?;
    // Whatever else committed meanwhile, the start never falls back below what expired.
    assert!(committed.log_start_offset >= new_start);
    for s in &gone {
        remove_objects(log, &s.files).await;
    }
    tracing::info!(topic = %log.topic, partition = log.partition, segments = n, log_start = committed.log_start_offset, "remote retention deleted segments");
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::manifest::test_segment;

    fn manifest(segs: &[(i64, i64, i64)]) -> PartitionManifest {
        let mut m = PartitionManifest::new("w", "t", 0, 0);
        m.segments = segs
            .iter()
            .map(|&(base, last, ts)| test_segment(base, last, ts))
            .collect();
        m
    }

    #[test]
    fn retention_counts_the_whole_log() {
        let m = manifest(&[(0, 9, 1_000), (10, 19, 2_000), (20, 29, 3_000)]);
        let mut c = LogConfig {
            retention_ms: -1,
            ..LogConfig::default()
        };
        assert_eq!(expired_count(&m, &c, 10_000, 0), 0);
        c.retention_ms = 7_500;
        assert_eq!(expired_count(&m, &c, 10_000, 0), 2);
        c.retention_ms = -1;
        c.retention_bytes = 250;
        // 300 remote + 100 only local: 150 too many, so one segment (100) goes, not two.
        assert_eq!(expired_count(&m, &c, 10_000, 100), 1);
        let mut m = m;
        m.log_start_offset = 20;
        c.retention_bytes = -1;
        assert_eq!(expired_count(&m, &c, 10_000, 0), 2);
    }
}
