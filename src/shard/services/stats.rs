//! A shard's counters and metrics, and cold-cache drops (this shard's or every shard's).

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::partition_ops::{OpOk, OpResult, PartitionOp, ShardStats};
use crate::shard::messages::ShardOp;
use crate::shard::runtime::Shard;

impl Shard {
    pub(in crate::shard) fn local_stats(&self) -> ShardStats {
        let c = self.cache.borrow().stats();
        ShardStats {
            device_reads: self.storage.device_reads(),
            cache_hits: c.hits,
            cache_misses: c.misses,
            cache_bytes: c.bytes,
            cache_budget_bytes: c.budget_bytes,
        }
    }

    /// Makes this shard's next reads cold: clears its page cache (log and index pages), and
    /// has every partition it owns fdatasync and drop the OS's cached pages of its files.
    pub(in crate::shard) async fn drop_local_caches(&self) -> OpResult {
        self.cache.borrow_mut().clear();
        crate::remote::chunks::clear();
        let handles: Vec<_> = self.partitions.borrow().values().cloned().collect();
        for h in handles {
            h.call(PartitionOp::DropOsCaches).await?;
        }
        Ok(OpOk::Stats(self.local_stats()))
    }

    /// Stats of every shard, summed (with `drop`: after dropping every shard's caches).
    pub async fn cluster_stats(self: &Rc<Self>, drop: bool) -> Result<ShardStats, BrokerError> {
        let mut total = match if drop {
            self.drop_local_caches().await?
        } else {
            OpOk::Stats(self.local_stats())
        } {
            OpOk::Stats(s) => s,
            _ => ShardStats::default(),
        };
        for peer in (0..self.n).filter(|&p| p != self.id) {
            let op = if drop {
                ShardOp::DropCaches
            } else {
                ShardOp::Stats
            };
            if let OpOk::Stats(s) = self.remote(peer, op).await? {
                total.add(&s);
            }
        }
        Ok(total)
    }

    /// This shard's metrics, with the gauges it knows now.
    pub(in crate::shard) fn local_metrics(&self) -> crate::metrics::MetricsSnapshot {
        let s = self.local_stats();
        let budget = self.config.max_inflight_bytes_per_shard as u64;
        let (heap_bytes, heap_blocks) = crate::alloc_guard::live_heap();
        let remote_cache = crate::remote::chunks::stats();
        let gauges = crate::metrics::Gauges {
            open_partitions: self.partitions.borrow().len() as u64,
            // The process's: reported by shard 0 only, so sums over shards stay right.
            open_fds: if self.id == 0 {
                crate::io::limits::open_fds()
            } else {
                0
            },
            connections: self.connections.get() as u64,
            device_reads: s.device_reads,
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            cache_bytes: s.cache_bytes,
            cache_budget_bytes: s.cache_budget_bytes,
            read_ahead_bytes: self.cache.borrow().stats().read_ahead_bytes,
            inflight_budget_used_bytes: budget.saturating_sub(self.inflight.available()),
            tasks: crate::tasks::live(),
            append_waiters: self.append_waiters() as u64,
            heap_live_bytes: if self.id == 0 { heap_bytes } else { 0 },
            heap_live_blocks: if self.id == 0 { heap_blocks } else { 0 },
            heap_allocations: match self.id {
                0 => crate::alloc_guard::allocations(),
                _ => 0,
            },
            remote_upload_lag_bytes: self
                .remote_logs
                .borrow()
                .values()
                .map(|r| r.upload_lag_bytes.get())
                .sum(),
            remote_cache_hits: remote_cache.0,
            remote_cache_misses: remote_cache.1,
            remote_cache_bytes: remote_cache.2,
            replication: self.replication_gauges(),
        };
        let mut snap = crate::metrics::snapshot(self.id, gauges);
        snap.shards = 1;
        snap
    }

    /// Every shard's metrics snapshot, in shard order.
    pub async fn cluster_metrics(
        self: &Rc<Self>,
    ) -> Result<Vec<crate::metrics::MetricsSnapshot>, BrokerError> {
        let mut all = Vec::with_capacity(self.n);
        for peer in 0..self.n {
            if peer == self.id {
                all.push(self.local_metrics());
            } else if let OpOk::Metrics(m) = self.remote(peer, ShardOp::Metrics).await? {
                all.push(*m);
            }
        }
        Ok(all)
    }

    /// Registered long polls of this shard's partitions (a metric).
    pub fn append_waiters(&self) -> usize {
        self.partitions
            .borrow()
            .values()
            .map(|h| h.append_watch().waiters())
            .sum()
    }
}
