//! The native Metrics body (PROTOCOL.md, key 19): every shard's metrics merged, with each
//! distribution sent whole (HdrHistogram V2 bytes and the exact sum), so a client can
//! subtract two answers and read percentiles of exactly the requests in between.

use bytes::Bytes;

use super::wire::{WireError, WireReader, WireWriter};
use crate::metrics::{Distribution, MetricsReport, NamedDistribution};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricsResponse {
    pub shards: i32,
    /// (name, sum, HdrHistogram V2 bytes)
    pub distributions: Vec<(String, i64, Bytes)>,
    /// (name, value): counters and gauges.
    pub values: Vec<(String, i64)>,
}

impl MetricsResponse {
    pub fn of(report: &MetricsReport) -> Self {
        MetricsResponse {
            shards: report.shards as i32,
            distributions: report
                .distributions
                .iter()
                .map(|d| {
                    let sum = i64::try_from(d.dist.sum).unwrap_or(i64::MAX);
                    (d.name.clone(), sum, Bytes::from(d.dist.encode_histogram()))
                })
                .collect(),
            values: report
                .values
                .iter()
                .map(|(k, v)| (k.clone(), i64::try_from(*v).unwrap_or(i64::MAX)))
                .collect(),
        }
    }

    /// The report, with every histogram decoded (a bad one is an error naming it).
    pub fn report(&self) -> Result<MetricsReport, String> {
        let distributions = self
            .distributions
            .iter()
            .map(|(name, sum, hist)| {
                let dist = Distribution::decode(hist, (*sum).max(0) as u64)
                    .map_err(|e| format!("metric {name}: {e}"))?;
                Ok(NamedDistribution {
                    name: name.clone(),
                    dist,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(MetricsReport {
            shards: self.shards.max(0) as usize,
            distributions,
            values: self
                .values
                .iter()
                .map(|(k, v)| (k.clone(), (*v).max(0) as u64))
                .collect(),
        })
    }

    pub fn put(&self, w: &mut WireWriter) {
        w.i32(self.shards).i32(self.distributions.len() as i32);
        for (name, sum, hist) in &self.distributions {
            w.string(name).i64(*sum).bytes(hist);
        }
        w.i32(self.values.len() as i32);
        for (name, v) in &self.values {
            w.string(name).i64(*v);
        }
    }

    pub fn get(r: &mut WireReader<'_>) -> Result<Self, WireError> {
        let shards = r.i32("shards")?;
        let n = r.count("distribution count", 14)?.unwrap_or(0);
        let mut distributions = Vec::with_capacity(n);
        for _ in 0..n {
            distributions.push((
                r.string("metric name")?,
                r.i64("sum")?,
                r.bytes("histogram")?,
            ));
        }
        let n = r.count("value count", 10)?.unwrap_or(0);
        let mut values = Vec::with_capacity(n);
        for _ in 0..n {
            values.push((r.string("metric name")?, r.i64("value")?));
        }
        Ok(MetricsResponse {
            shards,
            distributions,
            values,
        })
    }
}
