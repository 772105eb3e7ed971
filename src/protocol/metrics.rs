//! The native Metrics body (PROTOCOL.md, key 19): every shard's metrics merged, with each
//! distribution sent whole (HdrHistogram V2 bytes and the exact sum), so a client can
//! subtract two answers and read percentiles of exactly the requests in between.

use bytes::Bytes;

use super::field::wire_struct;
use crate::metrics::{Distribution, HistogramError, MetricsReport, NamedDistribution};

/// A distribution of a Metrics answer that does not decode, by name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metric {name}: {why}")]
pub struct BadDistribution {
    pub name: String,
    pub why: HistogramError,
}

wire_struct! {
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct MetricsResponse {
        pub shards: i32 = "shards",
        /// (name, sum, HdrHistogram V2 bytes)
        pub distributions: Vec<(String, i64, Bytes)> = "distribution",
        /// (name, value): counters and gauges.
        pub values: Vec<(String, i64)> = "metric value",
    }
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
    pub fn report(&self) -> Result<MetricsReport, BadDistribution> {
        let distributions = self
            .distributions
            .iter()
            .map(|(name, sum, hist)| {
                let dist = Distribution::decode(hist, (*sum).max(0) as u64).map_err(|why| {
                    BadDistribution {
                        name: name.clone(),
                        why,
                    }
                })?;
                Ok(NamedDistribution {
                    name: name.clone(),
                    dist,
                })
            })
            .collect::<Result<_, BadDistribution>>()?;
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
}
