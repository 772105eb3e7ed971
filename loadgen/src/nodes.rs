//! The servers a run observes: every live node of the cluster (one outside a cluster),
//! each on an admin connection of its own. Caches are dropped and counters read on all of
//! them, so a run's device reads and CPU are the cluster's, followers included.

use shardlog::client::Client;
use shardlog::metrics::MetricsReport;

use crate::breakdown::Breakdown;
use crate::cluster::Node;

pub struct Nodes {
    each: Vec<(Node, Client)>,
}

impl Nodes {
    pub async fn connect(nodes: &[Node]) -> Result<Nodes, String> {
        assert!(!nodes.is_empty(), "a cluster has a node");
        let mut each = Vec::new();
        for node in nodes {
            let client = crate::connect::connect(&node.addr).await?;
            each.push((node.clone(), client));
        }
        Ok(Nodes { each })
    }

    /// The admin connection of node `id`.
    pub fn client(&mut self, id: i32) -> Result<&mut Client, String> {
        let found = self.each.iter_mut().find(|(n, _)| n.id == id);
        found
            .map(|(_, c)| c)
            .ok_or_else(|| format!("node {id} is not a live node of the cluster"))
    }

    /// Device reads so far, summed over the nodes.
    pub async fn device_reads(&mut self) -> Result<i64, String> {
        let mut sum = 0;
        for (node, c) in &mut self.each {
            let stats = c
                .stats()
                .await
                .map_err(|e| format!("Stats of {}: {e}", node.addr))?;
            sum += stats.device_reads;
        }
        Ok(sum)
    }

    /// Drops every node's caches; returns the device reads so far, summed.
    pub async fn drop_caches(&mut self, kernel_page_cache: bool) -> Result<i64, String> {
        let mut sum = 0;
        for (node, c) in &mut self.each {
            let stats = c
                .drop_caches(kernel_page_cache)
                .await
                .map_err(|e| format!("DropCaches of {}: {e}", node.addr))?;
            sum += stats.device_reads;
        }
        Ok(sum)
    }

    /// Every node's metrics now (the start of a pass).
    pub async fn mark(&mut self) -> Result<Vec<MetricsReport>, String> {
        let mut marks = Vec::new();
        for (_, c) in &mut self.each {
            marks.push(crate::breakdown::mark(c).await?);
        }
        Ok(marks)
    }

    /// What the nodes did since `starts` over `ops` operations: one breakdown of their
    /// sum, and each node's CPU-seconds (in node order).
    pub async fn since(
        &mut self,
        starts: &[MetricsReport],
        ops: u64,
    ) -> Result<(Breakdown, Vec<f64>), String> {
        assert_eq!(starts.len(), self.each.len(), "one start per node");
        let mut deltas = Vec::new();
        for ((_, c), start) in self.each.iter_mut().zip(starts) {
            deltas.push(crate::breakdown::mark(c).await?.since(start));
        }
        Ok(crate::breakdown::sum_of(deltas, ops))
    }
}
