//! `shardlog consume`: prints records with kcat's format tokens. With `--from-time` /
//! `--to-time` it prints exactly the records with from <= timestamp < to: each partition
//! starts at its first record with timestamp >= from (ListOffsets, no scan) and reads on
//! while window records can still follow (`time_window.rs`); `--stop-at-first` keeps kcat's
//! rule. A summary goes to stderr.

use std::io::Write;
use std::time::Duration;

use super::leaders::{is_not_leader, Leaders};
use super::time_arg::{format_time, parse_time_flag, parse_window, parse_zone};
use super::time_window::{ConsumeSummary, PartitionWindow, Verdict, WindowRule};
use crate::client::ClientError;
use crate::format::batch::{split_batches, RecordsSection};
use crate::format::Record;
use crate::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};
use crate::protocol::ErrorCode;

#[derive(clap::Args, Debug, Clone)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub server: super::ServerAddr,
    /// Topic name (kcat's -t).
    #[arg(long, short = 't')]
    pub topic: String,
    /// Partition [default: all; produce: by key (murmur2), round-robin without one] (kcat's -p).
    #[arg(long, short = 'p')]
    pub partition: Option<i32>,
    /// kcat's -o: N, -N (N before the end of each partition), s@TIME, beginning or
    /// earliest, end or latest; e@TIME (given as a second -o) ends at the first record
    /// with timestamp >= TIME, as --to-time TIME --stop-at-first.
    #[arg(
        long,
        short = 'o',
        default_value = "earliest",
        allow_hyphen_values = true
    )]
    pub offset: Vec<String>,
    /// Start at each partition's first record with timestamp >= this (ms or ISO-8601;
    /// no zone means UTC).
    #[arg(long)]
    pub from_time: Option<String>,
    /// Print only records with timestamp < this (ms or ISO-8601; no zone means UTC).
    #[arg(long)]
    pub to_time: Option<String>,
    /// Stop after printing this many records (0 prints none; kcat's -c, the console
    /// consumer's --max-messages).
    #[arg(long, short = 'c', visible_alias = "max-messages")]
    pub max_records: Option<u64>,
    /// kcat tokens: %t %p %o %T (epoch ms) %I (ISO-8601 in --time-zone) %k %s %h %K %S
    /// (lengths, -1 null) %R \n \t.
    #[arg(long, short = 'f', default_value = "%s\\n")]
    pub format: String,
    /// Keep waiting for new records instead of exiting at the end of the log.
    #[arg(long, conflicts_with = "exit_at_end")]
    pub follow: bool,
    /// Exit at the end of the log (the default; kcat's -e).
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,
    /// Start at the beginning of each partition (the default; the console consumer's flag).
    #[arg(long, conflicts_with_all = ["from_time", "offset"])]
    pub from_beginning: bool,
    /// kcat's -Z: print a null key or value as NULL (default: nothing).
    #[arg(short = 'Z', long)]
    pub print_null: bool,
    /// End each partition's window at its first record with timestamp >= --to-time
    /// (kcat's rule; late records after it are missed).
    #[arg(long)]
    pub stop_at_first: bool,
    /// Exact windows: wait for records up to this much later than --to-time.
    #[arg(long, default_value_t = 3_600_000)]
    pub max_lateness_ms: i64,
    /// Exact windows: a partition ends after this many records in a row at or past
    /// --to-time + --max-lateness-ms (an isolated future-dated record does not end it).
    #[arg(long, default_value_t = 1000)]
    pub settle_records: u64,
    /// Zone for %I: UTC, Z, +08, +0800 or +08:00.
    #[arg(long, default_value = "UTC", allow_hyphen_values = true)]
    pub time_zone: String,
    /// Kafka's console consumer --group: resume from the group's committed offsets and
    /// commit the position as records print and on exit (the group must have no
    /// members; Kafka clients join groups through the Kafka listener).
    #[arg(long)]
    pub group: Option<String>,
    /// How often the position is committed while following.
    #[arg(long, default_value_t = 5000)]
    pub commit_interval_ms: u64,
    /// Kafka's isolation.level: read_committed (the default, as librdkafka and kcat) stops
    /// at the last stable offset and skips aborted transactions; read_uncommitted prints
    /// every record. Transaction markers are never printed as records.
    #[arg(long, value_enum, default_value = "read_committed")]
    pub isolation_level: IsolationLevel,
}

/// Which transactional records are printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsolationLevel {
    #[value(name = "read_committed")]
    ReadCommitted,
    #[value(name = "read_uncommitted")]
    ReadUncommitted,
}

impl ConsumeArgs {
    /// kcat's `-o` values resolved: one start (N, -N, s@TIME, beginning, end) and at most
    /// one e@TIME, which is `--to-time TIME --stop-at-first`. Returns the start.
    fn resolve_kcat_offsets(&mut self) -> Result<String, String> {
        let (ends, starts): (Vec<String>, Vec<String>) = std::mem::take(&mut self.offset)
            .into_iter()
            .partition(|o| o.starts_with("e@"));
        match (ends.as_slice(), self.to_time.take()) {
            ([], t) => self.to_time = t,
            ([e], None) => self.to_time = Some(e[2..].to_string()),
            _ => return Err("give at most one e@TIME, and not together with --to-time".into()),
        }
        self.stop_at_first |= !ends.is_empty();
        let start = match starts.as_slice() {
            [] => "earliest".to_string(),
            [s] => s.clone(),
            _ => return Err("give one start --offset (and at most one e@TIME)".into()),
        };
        self.offset = vec![start.clone()];
        Ok(start)
    }
}

const FETCH_BYTES: i32 = 1 << 20;

/// How values print: null keys and values (kcat's -Z), and the zone of `%I`.
pub struct PrintStyle {
    pub null: &'static [u8],
    pub zone: chrono::FixedOffset,
}

/// kcat-style format: `%t` topic, `%p` partition, `%o` offset, `%T` timestamp (epoch ms),
/// `%I` timestamp as ISO-8601 in `--time-zone`, `%k` key,
/// `%s` value, `%h` headers (name=value,...), `%K` / `%S` key / value length (-1: null), `%R` value length as a big-endian
/// 32-bit integer (binary), `%%` a percent sign, `\n` newline, `\t` tab. A null key or value prints as
/// `null` (kcat prints nothing, or `NULL` with -Z).
pub fn format_record(
    fmt: &str,
    topic: &str,
    partition: i32,
    r: &Record<'_>,
    style: &PrintStyle,
) -> Vec<u8> {
    let null = style.null;
    let mut out = Vec::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('%', Some(t)) => {
                chars.next();
                match t {
                    't' => out.extend_from_slice(topic.as_bytes()),
                    'p' => out.extend_from_slice(partition.to_string().as_bytes()),
                    'o' => out.extend_from_slice(r.offset.to_string().as_bytes()),
                    'T' => out.extend_from_slice(r.timestamp.to_string().as_bytes()),
                    'I' => out.extend_from_slice(format_time(r.timestamp, style.zone).as_bytes()),
                    'k' => out.extend_from_slice(r.key.unwrap_or(null)),
                    's' => out.extend_from_slice(r.value.unwrap_or(null)),
                    'h' => out.extend_from_slice(headers_csv(r).as_bytes()),
                    'K' => out.extend_from_slice(nullable_len(r.key).to_string().as_bytes()),
                    'S' => out.extend_from_slice(nullable_len(r.value).to_string().as_bytes()),
                    'R' => out.extend_from_slice(&(nullable_len(r.value) as i32).to_be_bytes()),
                    '%' => out.push(b'%'),
                    other => {
                        out.push(b'%');
                        out.extend_from_slice(other.to_string().as_bytes());
                    }
                }
            }
            ('\\', Some('n')) => {
                chars.next();
                out.push(b'\n');
            }
            ('\\', Some('t')) => {
                chars.next();
                out.push(b'\t');
            }
            (c, _) => out.extend_from_slice(c.to_string().as_bytes()),
        }
    }
    out
}

/// A failure a follower waits out: the connection (a server restart) or a retriable answer.
fn is_transient(e: &ClientError) -> bool {
    match e {
        ClientError::Io { .. } | ClientError::Connect { .. } | ClientError::Timeout { .. } => true,
        ClientError::Server { code, .. } => {
            matches!(code, ErrorCode::NotReady | ErrorCode::ShuttingDown)
        }
        ClientError::Protocol(_) | ClientError::Security(_) => false,
    }
}

/// Connects again, every second until the server is back (a follower runs until stopped).
async fn reconnect(args: &ConsumeArgs, cause: &ClientError) -> crate::client::Client {
    eprintln!(
        "lost the server ({cause}); reconnecting to {}",
        args.server.bootstrap
    );
    loop {
        glommio::timer::sleep(Duration::from_secs(1)).await;
        if let Ok(c) = super::connect(&args.server).await {
            eprintln!("reconnected to {}", args.server.bootstrap);
            return c;
        }
    }
}

/// Where each partition starts (kcat's `-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StartAt {
    Earliest,
    Latest,
    Offset(i64),
    /// `-N`: N records before the end of each partition.
    FromEnd(i64),
    /// `s@T`: the first record with timestamp >= T.
    Time(i64),
}

fn parse_start(raw: &str) -> Result<StartAt, String> {
    Ok(match raw.trim() {
        "earliest" | "beginning" => StartAt::Earliest,
        "latest" | "end" => StartAt::Latest,
        s if s.starts_with("s@") => StartAt::Time(parse_time_flag("--offset s@", &s[2..])?),
        s => match s.parse::<i64>() {
            Ok(n) if n < 0 => StartAt::FromEnd(-n),
            Ok(n) => StartAt::Offset(n),
            Err(_) => {
                return Err(format!(
                    "--offset {s:?}: use N, -N (N before the end), s@TIME, beginning/earliest or \
                     end/latest (e@TIME is --to-time TIME --stop-at-first)"
                ))
            }
        },
    })
}

/// An absolute start offset outside the partition is moved inside it, and the user told.
fn clamp_offset(partition: i32, n: i64, earliest: i64, end: i64) -> i64 {
    // Two answers from two moments: the end was read first, and a DeleteRecords to the
    // end followed by appends may have moved the log start past it since.
    let end = end.max(earliest);
    let clamped = n.clamp(earliest, end);
    if clamped != n {
        eprintln!(
            "partition {partition}: offset {n} is outside [{earliest}, {end}]; starting at {clamped}"
        );
    }
    clamped
}

/// kcat's %h: the headers as `name=value` separated by commas (a null value prints as the
/// name alone).
fn headers_csv(r: &Record<'_>) -> String {
    r.headers
        .iter()
        .map(|h| {
            let name = String::from_utf8_lossy(h.key);
            match h.value {
                Some(v) => format!("{name}={}", String::from_utf8_lossy(v)),
                None => name.into_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Length of a key or value, -1 for null (kcat's %K and %S).
fn nullable_len(field: Option<&[u8]>) -> i64 {
    field.map_or(-1, |f| f.len() as i64)
}

struct Cursor {
    partition: i32,
    next: i64,
    /// Records already fetched from `next` (a lookup by time returns its first batches).
    prefetched: Option<bytes::Bytes>,
    /// Stop before this offset (log end at start), unless following.
    end: i64,
    done: bool,
    window: PartitionWindow,
}

/// Prints the records; returns the summary for stderr.
pub async fn run(mut args: ConsumeArgs, out: &mut dyn Write) -> Result<ConsumeSummary, String> {
    let start = args.resolve_kcat_offsets()?;
    let (from, to) = parse_window(args.from_time.as_deref(), args.to_time.as_deref())?;
    let start_at = parse_start(&start)?;
    if args.settle_records == 0 || args.max_lateness_ms < 0 {
        return Err("--settle-records must be at least 1 and --max-lateness-ms at least 0".into());
    }
    let mut printer = Printer {
        out,
        format: &args.format,
        topic: &args.topic,
        style: PrintStyle {
            null: if args.print_null { b"NULL" } else { b"" },
            zone: parse_zone(&args.time_zone)?,
        },
        rule: WindowRule {
            from,
            to,
            stop_at_first: args.stop_at_first,
            max_lateness_ms: args.max_lateness_ms,
            settle: args.settle_records,
        },
        follow: args.follow,
        printed: 0,
        limit: args.max_records.unwrap_or(u64::MAX),
    };
    let mut client = super::connect(&args.server).await?;
    let partitions = select_partitions(&mut client, &args).await?;
    let offsets = crate::catalog::internal_topics::OFFSETS_TOPIC;
    let mut leaders = Leaders::of(client, &args.server, &[&args.topic, offsets]).await?;
    let committed = committed_offsets(&mut leaders, &args, &args.topic).await?;
    let mut summary = ConsumeSummary::default();
    let mut cursors = Vec::new();
    for p in partitions {
        let first = committed.get(&p).copied();
        let leader = leaders.client(&args.topic, p).await?;
        match start_of(leader, &args, p, from, start_at, first).await? {
            Some(cursor) => cursors.push(cursor),
            None => summary.empty.push(p),
        }
    }
    if printer.limit == 0 {
        return Ok(summary);
    }
    consume_rounds(&mut leaders, &args, &mut printer, &mut cursors).await?;
    summary.partitions = cursors.into_iter().map(|c| c.window).collect();
    summary.printed = summary.partitions.iter().map(|p| p.printed).sum();
    Ok(summary)
}

/// `--partition`, checked against the topic, or every partition.
async fn select_partitions(
    client: &mut crate::client::Client,
    args: &ConsumeArgs,
) -> Result<Vec<i32>, String> {
    let meta = super::topic_metadata(client, &args.topic).await?;
    match args.partition {
        Some(p) if p < 0 || p as usize >= meta.partitions.len() => Err(format!(
            "topic {:?} has partitions 0..{}, not {p}",
            args.topic,
            meta.partitions.len()
        )),
        Some(p) => Ok(vec![p]),
        None => Ok(meta.partitions.iter().map(|p| p.partition).collect()),
    }
}

/// An offset by time (or the earliest/latest sentinel) of one partition.
async fn offset_at(
    client: &mut crate::client::Client,
    topic: &str,
    p: i32,
    target: i64,
) -> Result<Option<i64>, String> {
    Ok(client
        .list_offsets(topic, p, target)
        .await
        .map_err(|e| e.to_string())?
        .map(|x| x.0))
}

/// The first record at or after time `t` and the batches from it, in one round trip
/// (FetchAtTime): `None` when no record qualifies.
async fn records_at(
    client: &mut crate::client::Client,
    topic: &str,
    p: i32,
    t: i64,
) -> Result<Option<(i64, bytes::Bytes)>, String> {
    let (found, f) = client
        .fetch_at_time(topic, p, t, FETCH_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    Ok(found.map(|(offset, _)| (offset, f.records)))
}

/// Where a partition starts: the group's committed offset (unless --from-time), the first
/// record at --from-time, or kcat's `-o`. `None`: nothing at or after --from-time.
async fn start_of(
    client: &mut crate::client::Client,
    args: &ConsumeArgs,
    p: i32,
    from: Option<i64>,
    start_at: StartAt,
    committed: Option<i64>,
) -> Result<Option<Cursor>, String> {
    let topic = args.topic.as_str();
    let end = offset_at(client, topic, p, LATEST_TIMESTAMP)
        .await?
        .unwrap_or(0);
    let mut prefetched = None;
    let next = match (committed, from, start_at) {
        (Some(o), None, _) => {
            let earliest = offset_at(client, topic, p, EARLIEST_TIMESTAMP)
                .await?
                .unwrap_or(0);
            clamp_offset(p, o, earliest, end)
        }
        (_, Some(t), _) | (None, None, StartAt::Time(t)) => {
            match records_at(client, topic, p, t).await? {
                Some((o, records)) => {
                    prefetched = Some(records);
                    o
                }
                None if args.follow || from.is_none() => end,
                None => return Ok(None),
            }
        }
        (None, None, start_at) => {
            let earliest = offset_at(client, topic, p, EARLIEST_TIMESTAMP)
                .await?
                .unwrap_or(0);
            match start_at {
                StartAt::Earliest => earliest,
                StartAt::Latest => end,
                StartAt::FromEnd(n) => end.saturating_sub(n).max(earliest),
                StartAt::Time(_) => end, // handled above
                StartAt::Offset(n) => clamp_offset(p, n, earliest, end),
            }
        }
    };
    // A lookup by time reads uncommitted: read_committed fetches again from its offset.
    let prefetched = prefetched.filter(|_| args.isolation_level == IsolationLevel::ReadUncommitted);
    Ok(Some(Cursor {
        partition: p,
        next,
        prefetched: prefetched.filter(|r| !r.is_empty()),
        end,
        done: false,
        window: PartitionWindow::new(p),
    }))
}

/// Fetches round-robin over the partitions until each is done (or forever when following),
/// committing the group's position every --commit-interval-ms and at the end.
async fn consume_rounds(
    leaders: &mut Leaders,
    args: &ConsumeArgs,
    printer: &mut Printer<'_>,
    cursors: &mut [Cursor],
) -> Result<(), String> {
    let topic = args.topic.as_str();
    let mut last_commit = std::time::Instant::now();
    let mut restarts = 0;
    'rounds: loop {
        let mut progressed = false;
        for c in cursors.iter_mut().filter(|c| !c.done) {
            if !args.follow && c.next >= c.end {
                c.done = true;
                c.window.ended(c.next, "end of the log");
                continue;
            }
            let Some((records, aborted)) = next_records(leaders, args, c).await? else {
                // Start the round over (bounded unless following: a leader that keeps
                // refusing is an error, not a reason to stop early or spin).
                restarts += 1;
                if restarts > MAX_ROUND_RESTARTS && !args.follow {
                    return Err(format!(
                        "{topic}-{}: its leader kept changing or refusing ({restarts} tries)",
                        c.partition
                    ));
                }
                glommio::timer::sleep(Duration::from_millis(100)).await;
                progressed = true;
                break;
            };
            restarts = 0;
            if records.is_empty() {
                continue;
            }
            progressed = true;
            let before = c.next;
            let flow = printer.print_fetched(c, &records, &aborted)?;
            assert!(c.next >= before, "a cursor never moves back");
            if flow == Flow::LimitReached {
                break 'rounds;
            }
        }
        if cursors.iter().all(|c| c.done) {
            break;
        }
        if last_commit.elapsed() >= Duration::from_millis(args.commit_interval_ms) {
            commit_position(leaders, args, topic, cursors).await?;
            last_commit = std::time::Instant::now();
        }
        if !progressed {
            if !args.follow {
                break;
            }
            printer.out.flush().map_err(|e| e.to_string())?;
            glommio::timer::sleep(Duration::from_millis(200)).await;
        }
    }
    printer.out.flush().map_err(|e| e.to_string())?;
    commit_position(leaders, args, topic, cursors).await
}

/// Rounds started over in a row (100 ms apart) before a consume that is not following
/// gives up: leadership settles within a few seconds.
const MAX_ROUND_RESTARTS: u32 = 100;

/// The cursor's next records (prefetched, or fetched on its partition's leader); None
/// when the round should start over: leadership moved (asked again), or, following, the
/// partition has no leader yet or the server is back after a restart.
async fn next_records(
    leaders: &mut Leaders,
    args: &ConsumeArgs,
    c: &mut Cursor,
) -> Result<Option<(bytes::Bytes, Vec<(i64, i64)>)>, String> {
    if let Some(records) = c.prefetched.take() {
        return Ok(Some((records, Vec::new())));
    }
    let fetched = match leaders.client(&args.topic, c.partition).await {
        Ok(leader) => fetch(leader, args, c).await,
        // Following, a partition without a leader waits for the election.
        Err(e) if args.follow => {
            eprintln!("{e}; waiting");
            glommio::timer::sleep(Duration::from_secs(1)).await;
            leaders.refresh().await?;
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match fetched {
        Ok(fetched) => Ok(Some(fetched)),
        // Leadership moved: ask where, and read on there.
        Err(e) if is_not_leader(&e) => leaders.refresh().await.map(|_| None),
        // Following: a server restart (or NotReady while it opens its partitions) is
        // waited out, and reading resumes where it was.
        Err(e) if args.follow && is_transient(&e) => {
            let home = reconnect(args, &e).await;
            leaders.start_over(home).await.map(|_| None)
        }
        Err(e) => Err(format!(
            "fetching {}-{} at {}: {e}",
            args.topic, c.partition, c.next
        )),
    }
}

/// One fetch at the cursor in the chosen isolation: the records, and the aborted
/// transactions they overlap (read_committed). Not following, a read_committed cursor
/// ends at the last stable offset, as Kafka's consumer does.
async fn fetch(
    client: &mut crate::client::Client,
    args: &ConsumeArgs,
    c: &mut Cursor,
) -> Result<(bytes::Bytes, Vec<(i64, i64)>), crate::client::ClientError> {
    let topic = args.topic.as_str();
    match args.isolation_level {
        IsolationLevel::ReadUncommitted => client
            .fetch(topic, c.partition, c.next, FETCH_BYTES)
            .await
            .map(|f| (f.records, Vec::new())),
        IsolationLevel::ReadCommitted => {
            let f = client
                .fetch_committed(topic, c.partition, c.next, FETCH_BYTES)
                .await?;
            if !args.follow {
                c.end = c.end.min(f.last_stable_offset);
            }
            Ok((f.records, f.aborted))
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    LimitReached,
}

/// Prints what the window lets through, up to --max-records.
struct Printer<'a> {
    out: &'a mut dyn Write,
    format: &'a str,
    topic: &'a str,
    style: PrintStyle,
    rule: WindowRule,
    follow: bool,
    printed: u64,
    limit: u64,
}

impl Printer<'_> {
    /// Prints the records of one fetch reply for partition `c`, moving its position.
    /// Transaction markers and the batches of `aborted` transactions are skipped.
    fn print_fetched(
        &mut self,
        c: &mut Cursor,
        data: &[u8],
        aborted: &[(i64, i64)],
    ) -> Result<Flow, String> {
        let batches = split_batches(data).map_err(|e| format!("bad fetch data: {e}"))?;
        let mut skip = AbortedSkipper::new(aborted);
        for (start, h) in batches {
            let bytes = &data[start..start + h.size()];
            if skip.skips(&h, bytes) {
                c.next = c.next.max(h.last_offset() + 1);
                continue;
            }
            let section = RecordsSection::of(bytes, &h).map_err(|e| format!("bad batch: {e}"))?;
            let records = section.decode().map_err(|e| format!("bad record: {e}"))?;
            let first_new = c.next;
            for r in records.iter().filter(|r| r.offset >= first_new) {
                if !self.follow && r.offset >= c.end {
                    c.done = true;
                    c.window.ended(r.offset, "end of the log");
                    return Ok(Flow::Continue);
                }
                match c.window.judge(&self.rule, r.offset, r.timestamp) {
                    Verdict::Skip => continue,
                    Verdict::Stop => {
                        c.done = true;
                        return Ok(Flow::Continue);
                    }
                    Verdict::Print => {}
                }
                let line = format_record(self.format, self.topic, c.partition, r, &self.style);
                self.out.write_all(&line).map_err(|e| e.to_string())?;
                self.printed += 1;
                // The group's position: the record after the last one printed.
                c.next = r.offset + 1;
                if self.printed >= self.limit {
                    return Ok(Flow::LimitReached);
                }
            }
            c.next = c.next.max(h.last_offset() + 1);
        }
        Ok(Flow::Continue)
    }
}

/// Kafka's read_committed rule for the batches of one fetch: a producer's transactional
/// batches are skipped from the first offset of one of its aborted transactions until
/// its ABORT marker; control batches (the markers) are never records to print.
struct AbortedSkipper {
    /// (first offset, producer id), latest first: popped as batches reach them.
    pending: Vec<(i64, i64)>,
    aborting: std::collections::HashSet<i64>,
}

impl AbortedSkipper {
    fn new(aborted: &[(i64, i64)]) -> Self {
        let mut pending: Vec<(i64, i64)> = aborted.iter().map(|&(p, first)| (first, p)).collect();
        pending.sort_unstable_by(|a, b| b.cmp(a));
        AbortedSkipper {
            pending,
            aborting: Default::default(),
        }
    }

    /// Whether batch `h` is not printed.
    fn skips(&mut self, h: &crate::format::BatchHeader, bytes: &[u8]) -> bool {
        while self
            .pending
            .last()
            .is_some_and(|(first, _)| *first <= h.last_offset())
        {
            let (_, producer) = self.pending.pop().expect("checked");
            self.aborting.insert(producer);
        }
        if h.is_control() {
            if is_abort_marker(h, bytes) {
                self.aborting.remove(&h.producer_id);
            }
            return true;
        }
        h.is_transactional() && self.aborting.contains(&h.producer_id)
    }
}

/// Whether a control batch is an ABORT marker.
fn is_abort_marker(h: &crate::format::BatchHeader, bytes: &[u8]) -> bool {
    let Ok(section) = RecordsSection::of(bytes, h) else {
        return false;
    };
    let first = section.iter().next().and_then(Result::ok);
    first
        .and_then(|r| crate::format::control::marker_of_record(r.key?, r.value))
        .is_some_and(|m| !m.commit)
}

/// The group's committed offsets of `topic`'s partitions (none without --group).
async fn committed_offsets(
    leaders: &mut Leaders,
    args: &ConsumeArgs,
    topic: &str,
) -> Result<std::collections::HashMap<i32, i64>, String> {
    let Some(group) = &args.group else {
        return Ok(Default::default());
    };
    let asked = crate::protocol::Request::OffsetFetch {
        group: group.clone(),
        topics: Some(vec![topic.to_string()]),
    };
    let failed = |e: &dyn std::fmt::Display| format!("committed offsets of group {group:?}: {e}");
    let found = match leaders.at_coordinator(group, &asked).await {
        Ok(crate::protocol::ResponseBody::OffsetFetch(offsets)) => offsets,
        Ok(other) => return Err(failed(&format!("unexpected answer {other:?}"))),
        Err(e) => return Err(failed(&e)),
    };
    Ok(found.into_iter().map(|(_, p, o, _)| (p, o)).collect())
}

/// Commits each partition's position for --group (a commit from outside the group).
async fn commit_position(
    leaders: &mut Leaders,
    args: &ConsumeArgs,
    topic: &str,
    cursors: &[Cursor],
) -> Result<(), String> {
    let Some(group) = &args.group else {
        return Ok(());
    };
    let offsets = cursors
        .iter()
        .map(|c| (topic.to_string(), c.partition, c.next, String::new()))
        .collect();
    let asked = crate::protocol::Request::OffsetCommit {
        group: group.clone(),
        offsets,
    };
    let failed = |e: &dyn std::fmt::Display| format!("committing for group {group:?}: {e}");
    let codes = match leaders.at_coordinator(group, &asked).await {
        Ok(crate::protocol::ResponseBody::OffsetCommit(codes)) => codes,
        Ok(other) => return Err(failed(&format!("unexpected answer {other:?}"))),
        Err(e) => return Err(failed(&e)),
    };
    match codes.iter().find(|(_, _, code)| *code != ErrorCode::None) {
        Some((t, p, code)) => Err(format!("committing {t}-{p} for group {group:?}: {code}")),
        None => Ok(()),
    }
}
