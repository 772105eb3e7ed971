//! `shardlog timestamps`: the troubleshooting checklist for a topic's timestamps, per
//! partition: timestamp type, first/last/min/max (ISO-8601 in `--time-zone`, UTC by
//! default), timestamps out of order (below the one before them, so one future-dated record
//! marks one step back, not everything after it) and the largest such step back,
//! timestamps in the future of the server's clock and by how much, and timestamps before
//! 2000 (seconds written as milliseconds). By default it reads batch headers only (each
//! batch's first and max timestamps: cheap); `--deep` decodes every record.
//! `--from-time`/`--to-time` limit it to a window.

use std::io::Write;

use serde_json::json;

use super::time_arg::parse_window;
use crate::format::batch::{split_batches, RecordsSection};
use crate::format::BatchHeader;
use crate::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};

/// 2000-01-01T00:00:00Z: a timestamp before it is most likely seconds, not milliseconds.
const YEAR_2000_MS: i64 = 946_684_800_000;
const FETCH_BYTES: i32 = 1 << 20;

#[derive(clap::Args, Debug, Clone)]
pub struct TimestampsArgs {
    #[command(flatten)]
    pub server: super::ServerAddr,
    /// Topic name.
    #[arg(long)]
    pub topic: String,
    /// Only timestamps >= this (ms or ISO-8601; no zone means UTC).
    #[arg(long)]
    pub from_time: Option<String>,
    /// Only timestamps < this (ms or ISO-8601; no zone means UTC).
    #[arg(long)]
    pub to_time: Option<String>,
    /// Decode every record (default: each batch's first and max timestamps, from its
    /// header).
    #[arg(long)]
    pub deep: bool,
    /// Zone the times are printed in: UTC, local, Z, +HH, +HHMM or +HH:MM.
    #[arg(long, default_value = "UTC", allow_hyphen_values = true)]
    pub time_zone: String,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What one partition's timestamps look like.
#[derive(Debug, Clone, Default)]
pub struct TimestampStats {
    /// Timestamps observed: every record's (deep), or each batch's first and max.
    pub observed: u64,
    pub records: u64,
    pub first: Option<i64>,
    pub last: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// Timestamps below the one observed just before them.
    pub out_of_order: u64,
    /// Largest step back (previous - timestamp) among those out of order.
    pub max_lateness_ms: i64,
    pub future: u64,
    pub max_ahead_ms: i64,
    pub before_2000: u64,
    /// Batches by the timestamp type each carries (a topic's type may have changed).
    pub create_time_batches: u64,
    pub log_append_time_batches: u64,
    /// Records whose timestamps the headers do not give (CreateTime records after a
    /// batch's first that are not its max): only --deep reads them.
    pub unobserved: u64,
}

impl TimestampStats {
    pub fn observe(&mut self, ts: i64, now: i64) {
        self.observed += 1;
        self.first.get_or_insert(ts);
        if let Some(previous) = self.last.filter(|&p| ts < p) {
            self.out_of_order += 1;
            self.max_lateness_ms = self.max_lateness_ms.max(previous - ts);
        }
        self.last = Some(ts);
        self.min = Some(self.min.map_or(ts, |m| m.min(ts)));
        self.max = Some(self.max.map_or(ts, |m| m.max(ts)));
        if ts > now {
            self.future += 1;
            self.max_ahead_ms = self.max_ahead_ms.max(ts - now);
        }
        if ts < YEAR_2000_MS {
            self.before_2000 += 1;
        }
        assert!(
            self.min <= self.max,
            "the smallest timestamp seen is not above the largest"
        );
        assert!(
            self.out_of_order < self.observed,
            "the first timestamp is never out of order"
        );
    }
}

fn in_window(ts: i64, from: Option<i64>, to: Option<i64>) -> bool {
    from.is_none_or(|f| ts >= f) && to.is_none_or(|t| ts < t)
}

/// Adds one fetched batch to the stats.
fn observe_batch(
    stats: &mut TimestampStats,
    bytes: &[u8],
    h: &BatchHeader,
    deep: bool,
    window: (Option<i64>, Option<i64>),
    now: i64,
) -> Result<(), String> {
    let log_append = h.timestamp_type() == crate::format::TimestampType::LogAppendTime;
    match log_append {
        true => stats.log_append_time_batches += 1,
        false => stats.create_time_batches += 1,
    }
    if !deep {
        observe_header(stats, h, log_append, window, now);
        return Ok(());
    }
    let section = RecordsSection::of(bytes, h).map_err(|e| format!("bad batch: {e}"))?;
    for r in section.decode().map_err(|e| format!("bad record: {e}"))? {
        if in_window(r.timestamp, window.0, window.1) {
            stats.records += 1;
            stats.observe(r.timestamp, now);
        }
    }
    Ok(())
}

/// A batch seen through its header. A LogAppendTime batch's records all carry its max
/// timestamp (the append time); a CreateTime header gives its first record's timestamp and
/// the largest, and the records in between are counted as unobserved.
fn observe_header(
    stats: &mut TimestampStats,
    h: &BatchHeader,
    log_append: bool,
    window: (Option<i64>, Option<i64>),
    now: i64,
) {
    let count = h.records_count.max(0) as u64;
    if log_append {
        if in_window(h.max_timestamp, window.0, window.1) {
            stats.records += count;
            stats.observe(h.max_timestamp, now);
        }
        return;
    }
    let seen: Vec<i64> = [h.base_timestamp, h.max_timestamp]
        .into_iter()
        .take(if h.base_timestamp == h.max_timestamp {
            1
        } else {
            2
        })
        .filter(|&ts| in_window(ts, window.0, window.1))
        .collect();
    if seen.is_empty() {
        return;
    }
    assert!(seen.len() <= 2, "a header names at most two timestamps");
    stats.records += count;
    stats.unobserved += count.saturating_sub(seen.len() as u64);
    seen.into_iter().for_each(|ts| stats.observe(ts, now));
}

pub async fn run(args: TimestampsArgs, out: &mut dyn Write) -> Result<(), String> {
    let (from, to) = parse_window(args.from_time.as_deref(), args.to_time.as_deref())?;
    let mut client = super::connect(&args.server).await?;
    let meta = super::topic_metadata(&mut client, &args.topic).await?;
    let ts_type = meta
        .configs
        .iter()
        .find(|(k, _)| k == "message.timestamp.type")
        .map_or("CreateTime".to_string(), |(_, v)| v.clone());
    // "Future" is judged by the server's clock, as the guard rails are.
    let now = client.stats().await.map_err(|e| e.to_string())?.clock_ms;
    let topic = args.topic.as_str();
    let err = |e: crate::client::ClientError| e.to_string();
    let mut leaders = super::leaders::Leaders::of(client, &args.server, &[topic]).await?;
    let mut rows = Vec::new();
    for p in meta.partitions.iter().map(|p| p.partition) {
        let client = leaders.client(topic, p).await?;
        let end = client
            .list_offsets(topic, p, LATEST_TIMESTAMP)
            .await
            .map_err(err)?
            .map_or(0, |x| x.0);
        let start = match from {
            Some(f) => client.list_offsets(topic, p, f).await.map_err(err)?,
            None => client
                .list_offsets(topic, p, EARLIEST_TIMESTAMP)
                .await
                .map_err(err)?,
        }
        .map_or(end, |x| x.0);
        let mut stats = TimestampStats::default();
        let mut next = start;
        while next < end {
            let f = client
                .fetch(topic, p, next, FETCH_BYTES)
                .await
                .map_err(err)?;
            if f.records.is_empty() {
                break;
            }
            for (at, h) in split_batches(&f.records).map_err(|e| e.to_string())? {
                if h.last_offset() >= next && h.base_offset < end {
                    let bytes = &f.records[at..at + h.size()];
                    observe_batch(&mut stats, bytes, &h, args.deep, (from, to), now)?;
                }
                next = next.max(h.last_offset() + 1);
            }
        }
        rows.push((p, stats));
    }
    let zone = super::time_arg::parse_zone(&args.time_zone)?;
    if args.json {
        print_json(out, topic, &ts_type, args.deep, &rows, now)
    } else {
        print_table(out, &ts_type, args.deep, &rows, zone)
    }
    .map_err(|e| e.to_string())
}

/// What the table shows and what it cannot: the types of the batches read, and the
/// records only --deep reads.
fn print_preamble(
    out: &mut dyn Write,
    ts_type: &str,
    deep: bool,
    rows: &[(i32, TimestampStats)],
) -> std::io::Result<()> {
    let unit = if deep {
        "record"
    } else {
        "batch: its first and max (headers; --deep reads every record)"
    };
    let types = batch_types(rows);
    writeln!(
        out,
        "timestamp type: {ts_type} (the topic's now); batches found: {types}; one timestamp per {unit}"
    )?;
    let unobserved: u64 = rows.iter().map(|(_, s)| s.unobserved).sum();
    if unobserved > 0 {
        writeln!(
            out,
            "{unobserved} CreateTime records are neither the first nor the max of their batch: \
             their timestamps (a record dated 1970, one earlier than its batch's first) are read \
             only by --deep; MIN, OUT-OF-ORDER, FUTURE and PRE-2000 may be higher"
        )?;
    }
    if ts_type == "LogAppendTime" {
        writeln!(
            out,
            "LogAppendTime: the server stamped every record on append; the producers' own \
             times are not stored, so their spread against append time is not available"
        )
    } else {
        writeln!(
            out,
            "CreateTime: the producers' clocks; the time each batch was appended is not \
             recorded, so their skew against it is not available (future = ahead of the \
             server's clock)"
        )
    }
}

/// The timestamp types of the batches read, with their counts.
fn batch_types(rows: &[(i32, TimestampStats)]) -> String {
    let create: u64 = rows.iter().map(|(_, s)| s.create_time_batches).sum();
    let append: u64 = rows.iter().map(|(_, s)| s.log_append_time_batches).sum();
    match (create, append) {
        (0, 0) => "none".into(),
        (c, 0) => format!("{c} CreateTime"),
        (0, a) => format!("{a} LogAppendTime"),
        (c, a) => format!("{c} CreateTime, {a} LogAppendTime"),
    }
}

/// A time as ISO-8601 in `zone` ("-" when there is none).
fn opt(v: Option<i64>, zone: chrono::FixedOffset) -> String {
    v.map_or("-".into(), |v| super::time_arg::format_time(v, zone))
}

fn print_table(
    out: &mut dyn Write,
    ts_type: &str,
    deep: bool,
    rows: &[(i32, TimestampStats)],
    zone: chrono::FixedOffset,
) -> std::io::Result<()> {
    print_preamble(out, ts_type, deep, rows)?;
    writeln!(
        out,
        "{:<9} {:>8} {:>29} {:>29} {:>29} {:>29} {:>12} {:>14} {:>8} {:>14} {:>9}",
        "PARTITION",
        "RECORDS",
        "FIRST",
        "LAST",
        "MIN",
        "MAX",
        "OUT-OF-ORDER",
        "MAX-LATE-MS",
        "FUTURE",
        "MAX-AHEAD-MS",
        "PRE-2000"
    )?;
    for (p, s) in rows {
        writeln!(
            out,
            "{p:<9} {:>8} {:>29} {:>29} {:>29} {:>29} {:>12} {:>14} {:>8} {:>14} {:>9}",
            s.records,
            opt(s.first, zone),
            opt(s.last, zone),
            opt(s.min, zone),
            opt(s.max, zone),
            s.out_of_order,
            s.max_lateness_ms,
            s.future,
            s.max_ahead_ms,
            s.before_2000
        )?;
    }
    Ok(())
}

fn print_json(
    out: &mut dyn Write,
    topic: &str,
    ts_type: &str,
    deep: bool,
    rows: &[(i32, TimestampStats)],
    now: i64,
) -> std::io::Result<()> {
    let partitions: Vec<_> = rows
        .iter()
        .map(|(p, s)| {
            json!({
                "partition": p, "records": s.records, "observed": s.observed,
                "first": s.first, "last": s.last, "min": s.min, "max": s.max,
                "outOfOrder": s.out_of_order, "maxLatenessMs": s.max_lateness_ms,
                "future": s.future, "maxAheadMs": s.max_ahead_ms, "before2000": s.before_2000,
                "createTimeBatches": s.create_time_batches,
                "logAppendTimeBatches": s.log_append_time_batches,
                "unobserved": s.unobserved,
            })
        })
        .collect();
    let doc = json!({
        "topic": topic, "timestampType": ts_type,
        "unit": if deep { "record" } else { "batch" },
        "clockMs": now, "partitions": partitions,
    });
    writeln!(out, "{doc}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checklist_counts_what_brute_force_counts() {
        let now = 2_000_000_000_000;
        let mut s = TimestampStats::default();
        for ts in [100_000, now - 10, now - 50, now + 5_000, now - 20, 5] {
            s.observe(ts, now);
        }
        assert_eq!((s.first, s.last), (Some(100_000), Some(5)));
        assert_eq!((s.min, s.max), (Some(5), Some(now + 5_000)));
        // Each below the one before it: now-50 (after now-10), now-20 (after now+5000) and 5
        // (after now-20); the one future-dated record marks one step back, not all after it.
        assert_eq!(s.out_of_order, 3);
        assert_eq!(s.max_lateness_ms, now - 20 - 5);
        assert_eq!((s.future, s.max_ahead_ms), (1, 5_000));
        assert_eq!(s.before_2000, 2);
    }
}
