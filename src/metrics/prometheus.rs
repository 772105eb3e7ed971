//! The Prometheus text exposition (format 0.0.4) of every shard's metrics, labelled by
//! shard, written by the prometheus-client crate's encoder from snapshots taken at scrape
//! time (a `Collector`: nothing is registered ahead, nothing shared with the shards).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::snapshot::{Kind, SHARD_VALUES};
use super::{Distribution, MetricsSnapshot};

/// Bucket bounds of latency histograms, in seconds: 5 us to 10 s.
const LATENCY_BUCKETS: [f64; 20] = [
    5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
    100e-3, 250e-3, 500e-3, 1.0, 2.5, 5.0, 10.0,
];
/// Bucket bounds of the commands-per-group-commit histogram.
const COUNT_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// Renders the snapshots (one per shard) as Prometheus text.
pub fn render(snapshots: Vec<MetricsSnapshot>) -> String {
    let mut registry = Registry::with_prefix("shardlog");
    registry.register_collector(Box::new(Snapshots(snapshots)));
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode_registry(&mut out, &registry);
    let _ = prometheus_client::encoding::text::encode_eof(&mut out);
    out
}

#[derive(Debug)]
struct Snapshots(Vec<MetricsSnapshot>);

type Labels = Vec<(&'static str, String)>;

fn shard_label(s: &MetricsSnapshot) -> Labels {
    vec![("shard", s.shard.to_string())]
}

/// Per-bucket counts of `d` at `bounds` (scaled by `scale` from recorded units), the last
/// bucket +Inf; the encoder makes them cumulative.
fn buckets(d: &Distribution, bounds: &[f64], scale: f64) -> Vec<(f64, u64)> {
    let mut below = 0u64;
    let mut out: Vec<(f64, u64)> = bounds
        .iter()
        .map(|&le| {
            let upto = d.hist.count_between(0, (le / scale) as u64).max(below);
            let n = upto - below;
            below = upto;
            (le, n)
        })
        .collect();
    out.push((f64::INFINITY, d.count_recorded().saturating_sub(below)));
    // The buckets partition what was recorded: each value is counted once.
    let counted: u64 = out.iter().map(|(_, n)| n).sum();
    assert_eq!(
        counted,
        d.count_recorded(),
        "histogram buckets lose or add values"
    );
    out
}

fn histogram(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, &Distribution)],
    latency: bool,
) -> Result<(), std::fmt::Error> {
    let (bounds, scale): (&[f64], f64) = if latency {
        (&LATENCY_BUCKETS, 1e-9)
    } else {
        (&COUNT_BUCKETS, 1.0)
    };
    let mut m = e.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, d) in rows {
        let sum = d.sum as f64 * scale;
        let b = buckets(d, bounds, scale);
        m.encode_family(labels)?
            .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                sum,
                d.count_recorded(),
                &b,
                None,
            )?;
    }
    Ok(())
}

fn counter(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, u64)],
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in rows {
        m.encode_family(labels)?
            .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(v, None)?;
    }
    Ok(())
}

fn gauge<V: prometheus_client::encoding::EncodeGaugeValue>(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, V)],
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in rows {
        m.encode_family(labels)?.encode_gauge(v)?;
    }
    Ok(())
}

impl Snapshots {
    fn per_shard<T>(&self, f: impl Fn(&MetricsSnapshot) -> T) -> Vec<(Labels, T)> {
        self.0.iter().map(|s| (shard_label(s), f(s))).collect()
    }

    fn encode_requests(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let api_rows = |f: &dyn Fn(&super::ApiStats) -> u64| -> Vec<(Labels, u64)> {
            self.0
                .iter()
                .flat_map(|s| {
                    s.apis.iter().map(move |a| {
                        let mut l = shard_label(s);
                        l.push(("wire", a.wire.to_string()));
                        l.push(("api", a.api.to_string()));
                        (l, f(a))
                    })
                })
                .collect()
        };
        counter(
            e,
            "requests",
            "Requests answered, by shard, wire protocol and API.",
            &api_rows(&|a| a.requests),
        )?;
        counter(
            e,
            "request_errors",
            "Requests answered with an error.",
            &api_rows(&|a| a.errors),
        )?;
        counter(
            e,
            "request_bytes_in",
            "Request frame bytes read.",
            &api_rows(&|a| a.bytes_in),
        )?;
        counter(
            e,
            "request_bytes_out",
            "Reply frame bytes written.",
            &api_rows(&|a| a.bytes_out),
        )?;
        let latency: Vec<(Labels, &Distribution)> = self
            .0
            .iter()
            .flat_map(|s| {
                s.apis.iter().map(move |a| {
                    let mut l = shard_label(s);
                    l.push(("wire", a.wire.to_string()));
                    l.push(("api", a.api.to_string()));
                    (l, &a.latency)
                })
            })
            .collect();
        histogram(
            e,
            "request_duration_seconds",
            "Time in the server per request: frame read to reply written.",
            &latency,
            true,
        )
    }

    fn encode_stages(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows: Vec<(Labels, &Distribution)> = self
            .0
            .iter()
            .flat_map(|s| {
                s.stages.iter().map(move |st| {
                    let mut l = shard_label(s);
                    l.push(("stage", st.name.clone()));
                    (l, &st.dist)
                })
            })
            .collect();
        histogram(
            e,
            "stage_duration_seconds",
            "Time per request stage (PROTOCOL.md, Metrics).",
            &rows,
            true,
        )?;
        let groups: Vec<(Labels, &Distribution)> = self
            .0
            .iter()
            .map(|s| (shard_label(s), &s.group_commit))
            .collect();
        histogram(
            e,
            "group_commit_commands",
            "Commands a partition task ran as one group (one flush or fdatasync).",
            &groups,
            false,
        )
    }

    fn encode_storage(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for v in &SHARD_VALUES {
            let rows = self.per_shard(v.get);
            match v.kind {
                Kind::Counter => counter(e, v.name, v.help, &rows)?,
                Kind::Gauge => gauge(e, v.name, v.help, &rows)?,
            }
        }
        gauge(
            e,
            "cache_hit_ratio",
            "Hits over lookups since start (0 before any lookup).",
            &self.per_shard(|s| {
                let g = s.gauges;
                let all = g.cache_hits + g.cache_misses;
                if all == 0 {
                    0.0
                } else {
                    g.cache_hits as f64 / all as f64
                }
            }),
        )
    }
}

impl Snapshots {
    /// Per follower of each partition led here: records and seconds behind its leader.
    fn encode_follower_lags(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows = |value: &dyn Fn(&super::FollowerLag) -> f64| -> Vec<(Labels, f64)> {
            let each = self.0.iter().flat_map(|s| {
                s.follower_lags.iter().map(move |l| {
                    let mut labels = shard_label(s);
                    labels.push(("topic", l.topic.clone()));
                    labels.push(("partition", l.partition.to_string()));
                    labels.push(("follower", l.follower.to_string()));
                    (labels, value(l))
                })
            });
            each.collect()
        };
        gauge(
            e,
            "follower_lag_records",
            "Cluster mode: records a follower is behind this node's leader, per partition.",
            &rows(&|l| l.records as f64),
        )?;
        gauge(
            e,
            "follower_lag_seconds",
            "Cluster mode: seconds since a follower was last caught up with this node's leader.",
            &rows(&|l| l.ms as f64 / 1000.0),
        )
    }
}

impl Collector for Snapshots {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.encode_requests(&mut e)?;
        self.encode_stages(&mut e)?;
        self.encode_storage(&mut e)?;
        self.encode_follower_lags(&mut e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{snapshot, Gauges, Stage};

    #[test]
    fn renders_counters_gauges_and_histograms_per_shard() {
        crate::metrics::record(Stage::DeviceRead, std::time::Duration::from_micros(30));
        crate::metrics::record(Stage::DeviceRead, std::time::Duration::from_micros(300));
        crate::metrics::record_request(crate::metrics::RequestDone {
            wire: "native",
            api: "Fetch",
            ok: true,
            bytes_in: 40,
            bytes_out: 16_000,
            took: std::time::Duration::from_micros(120),
        });
        let gauges = Gauges {
            cache_hits: 3,
            cache_misses: 1,
            ..Gauges::default()
        };
        let text = render(vec![snapshot(0, gauges), snapshot(1, Gauges::default())]);
        for want in [
            "shardlog_requests_total{shard=\"0\",wire=\"native\",api=\"Fetch\"} 1",
            "shardlog_request_bytes_out_total{shard=\"0\",wire=\"native\",api=\"Fetch\"} 16000",
            "shardlog_stage_duration_seconds_bucket{le=\"0.00005\",shard=\"0\",stage=\"device_read\"} 1",
            "shardlog_stage_duration_seconds_bucket{le=\"0.0001\",shard=\"0\",stage=\"device_read\"} 1",
            "shardlog_stage_duration_seconds_bucket{le=\"+Inf\",shard=\"0\",stage=\"device_read\"} 2",
            "shardlog_stage_duration_seconds_count{shard=\"0\",stage=\"device_read\"} 2",
            "shardlog_cache_hit_ratio{shard=\"0\"} 0.75",
            "shardlog_cache_hit_ratio{shard=\"1\"} 0.0",
            "# TYPE shardlog_group_commit_commands histogram",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }

    /// The metric names (`shardlog_...`) a Grafana dashboard's queries use.
    fn queried_metrics(dashboard: &str) -> std::collections::BTreeSet<String> {
        let json: serde_json::Value = serde_json::from_str(dashboard).unwrap();
        let panels = json["panels"].as_array().unwrap();
        let targets = panels.iter().flat_map(|p| p["targets"].as_array().unwrap());
        let mut names = std::collections::BTreeSet::new();
        for expr in targets.map(|t| t["expr"].as_str().unwrap()) {
            let words = expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            names.extend(
                words
                    .filter(|w| w.starts_with("shardlog_"))
                    .map(String::from),
            );
        }
        names
    }

    #[test]
    fn every_metric_the_cluster_dashboard_queries_is_served() {
        let dashboard = include_str!("../../docs/grafana/shardlog-cluster.json");
        crate::metrics::record_request(crate::metrics::RequestDone {
            wire: "kafka",
            api: "Produce",
            ok: true,
            bytes_in: 1,
            bytes_out: 1,
            took: std::time::Duration::from_micros(1),
        });
        let mut snap = snapshot(0, Gauges::default());
        snap.follower_lags.push(crate::metrics::FollowerLag {
            topic: "t".into(),
            partition: 0,
            follower: 2,
            records: 7,
            ms: 1500,
            adding: true,
        });
        let text = render(vec![snap]);
        for want in [
            "shardlog_follower_lag_records{shard=\"0\",topic=\"t\",partition=\"0\",follower=\"2\"} 7.0",
            "shardlog_follower_lag_seconds{shard=\"0\",topic=\"t\",partition=\"0\",follower=\"2\"} 1.5",
            "shardlog_replica_lag_records{shard=\"0\"} 7",
            "shardlog_reassignment_lag_records{shard=\"0\"} 7",
        ] {
            assert!(text.contains(want), "{want} in:\n{text}");
        }
        let served: std::collections::BTreeSet<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(['{', ' ']).next())
            .collect();
        let queried = queried_metrics(dashboard);
        assert!(queried.len() >= 8, "the dashboard queries {queried:?}");
        for name in &queried {
            assert!(served.contains(name.as_str()), "{name} is not served");
        }
    }
}
