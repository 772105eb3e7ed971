//! `shardlog dump-log`: prints `.log`, `.index` and `.timeindex` files in the line formats of
//! Kafka's `kafka-dump-log.sh` (DumpLogSegments), including its mismatch reports on stderr.
//! Works offline on files; plain buffered reads are fine here (no executor involved).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::file_window::FileWindow;
use crate::format::batch::{check_framing_and_crc, RecordsSection, LOG_OVERHEAD};
use crate::format::cursor::{BatchCursor, ByteRun};
use crate::format::{BatchError, BatchHeader};
use crate::log::file_names::parse_file_name;
use crate::log::offset_index::{self, OffsetIndex};
use crate::log::time_index::{self, TimeIndex};
use crate::log::{INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use std::borrow::Cow;
use std::cell::RefCell;

/// Bytes Kafka needs to see before it trusts a batch's framing (offset, length, epoch, magic).
const HEADER_SIZE_UP_TO_MAGIC: usize = 17;

#[derive(clap::Args, Debug, Clone)]
pub struct DumpOptions {
    /// Comma-separated list of files to dump; remote segment files of tiered storage by URL
    /// (`s3://BUCKET/PREFIX/topics/T/P/<base>-<upload>.log`, credentials from the environment).
    #[arg(long, value_delimiter = ',', required = true)]
    pub files: Vec<PathBuf>,
    /// For remote files: the server's `remote.storage.endpoint` (an S3-compatible store),
    /// from `--command-config FILE` or `-X remote.storage.endpoint=URL`; without it the
    /// `AWS_ENDPOINT` variable, else AWS itself.
    #[command(flatten)]
    pub client: super::client_config::ClientConfigArgs,
    /// Print every record, not only batch headers.
    #[arg(long)]
    pub deep_iteration: bool,
    /// Print record keys and payloads (implies --deep-iteration).
    #[arg(long)]
    pub print_data_log: bool,
    /// Only check that index files pass the sanity check (exit 1 if one fails).
    #[arg(long)]
    pub index_sanity_check: bool,
    /// Check index files against their .log without printing the entries.
    #[arg(long)]
    pub verify_index_only: bool,
    /// Print records' keys and payloads only, without offsets, times and sizes (implies
    /// --deep-iteration).
    #[arg(long)]
    pub skip_record_metadata: bool,
    /// Largest batch to read; a larger one is reported (exit 1).
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE_SIZE)]
    pub max_message_size: usize,
}

/// Kafka's default --max-message-size.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 5 * 1024 * 1024;

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            files: Vec::new(),
            client: Default::default(),
            deep_iteration: false,
            print_data_log: false,
            index_sanity_check: false,
            verify_index_only: false,
            skip_record_metadata: false,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }
}

/// Problems found while dumping, reported on stderr after all files (as Kafka does).
#[derive(Default)]
struct Findings {
    index_mismatches: BTreeMap<String, Vec<(i64, i64)>>,
    time_mismatches: BTreeMap<String, Vec<(i64, i64)>>,
    out_of_order: BTreeMap<String, Vec<(i64, i64)>>,
    shallow_not_found: BTreeMap<String, Vec<(i64, i64)>>,
    non_consecutive: BTreeMap<String, Vec<(i64, i64)>>,
    /// Index files that failed `--index-sanity-check` (the tool then exits non-zero).
    failed_sanity: Vec<String>,
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

fn base_offset_of(path: &Path) -> Option<i64> {
    let name = path.file_name()?.to_str()?;
    parse_file_name(name).map(|(offset, _)| offset)
}

fn sibling(path: &Path, suffix: &str) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let stem = name.split('.').next()?;
    Some(path.with_file_name(format!("{stem}{suffix}")))
}

/// A `.log` read through a window, walked with the batch cursor like any other bytes.
type LogWindow = RefCell<FileWindow>;

impl ByteRun for LogWindow {
    fn run_len(&self) -> usize {
        self.borrow().len() as usize
    }

    /// The bytes, or none when the file cannot be read there (the walk then stops).
    fn range(&self, start: usize, end: usize) -> Cow<'_, [u8]> {
        let mut window = self.borrow_mut();
        let bytes = window.bytes(start as u64, end.saturating_sub(start));
        Cow::Owned(bytes.map(<[u8]>::to_vec).unwrap_or_default())
    }

    fn crc32c_of(&self, start: usize, end: usize) -> u32 {
        crc32c::crc32c(&self.range(start, end))
    }
}

/// The header of the whole batch at `pos` in a `.log`, if there is one.
fn header_at(log: &Option<LogWindow>, pos: usize) -> Option<BatchHeader> {
    let step = BatchCursor::at(log.as_ref()?, pos).next()?;
    step.ok().map(|(_, h)| h)
}

/// The `.log` next to an index file, read through a window (None if unreadable).
fn sibling_log(path: &Path) -> Option<LogWindow> {
    sibling(path, LOG_SUFFIX).and_then(|p| FileWindow::open(&p).ok().map(RefCell::new))
}

/// Runs the tool, writing the dump to `out` and reports to `err`. Returns false when a file
/// could not be read at all.
/// Dumps every file; `false` when a file could not be dumped or failed the sanity check
/// (the tool then exits non-zero, as Kafka's does).
pub fn run(opts: &DumpOptions, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<bool> {
    let mut findings = Findings::default();
    let mut ok = true;
    let deep = opts.deep_iteration || opts.print_data_log || opts.skip_record_metadata;
    for file in &opts.files {
        writeln!(out, "Dumping {}", file.display())?;
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let result = if !file.exists() {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file",
            ))
        } else if !file.is_file() {
            Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file (a FIFO, device or directory cannot be dumped)",
            ))
        } else if name.ends_with(LOG_SUFFIX) {
            dump_log(file, deep, opts, &mut findings, out, err)
        } else if name.ends_with(TIME_INDEX_SUFFIX) {
            dump_time_index(file, opts, &mut findings, out, err)
        } else if name.ends_with(INDEX_SUFFIX) {
            dump_index(file, opts, &mut findings, out, err)
        } else if name.ends_with(crate::log::txn_index::TXN_INDEX_SUFFIX) {
            dump_txn_index(file, out, err)
        } else {
            writeln!(err, "Ignoring unknown file {}", file.display())?;
            Ok(())
        };
        match result {
            // The reader went away (`| head`): stop; the caller ends quietly.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Err(e),
            Err(e) => {
                writeln!(err, "Could not dump {}: {e}", file.display())?;
                ok = false;
            }
            Ok(()) => {}
        }
    }
    print_findings(&findings, err)?;
    // Verifying an index fails on any entry that disagrees with its log.
    let index_disagrees = opts.verify_index_only
        && [
            &findings.index_mismatches,
            &findings.time_mismatches,
            &findings.out_of_order,
            &findings.shallow_not_found,
        ]
        .iter()
        .any(|m| !m.is_empty());
    Ok(ok && findings.failed_sanity.is_empty() && !index_disagrees)
}

fn print_findings(f: &Findings, err: &mut dyn Write) -> std::io::Result<()> {
    for (file, list) in &f.index_mismatches {
        writeln!(err, "Mismatches in :{file}")?;
        for (idx, log) in list {
            writeln!(err, "  Index offset: {idx}, log offset: {log}")?;
        }
    }
    for (file, list) in &f.time_mismatches {
        writeln!(err, "Found timestamp mismatch in :{file}")?;
        for (idx, log) in list {
            writeln!(err, "  Index timestamp: {idx}, log timestamp: {log}")?;
        }
    }
    for (file, list) in &f.out_of_order {
        writeln!(err, "Found out of order timestamp in :{file}")?;
        for (idx, prev) in list {
            writeln!(
                err,
                "  Index timestamp: {idx}, Previously indexed timestamp: {prev}"
            )?;
        }
    }
    for list in f.shallow_not_found.values() {
        writeln!(
            err,
            "The following indexed offsets are not found in the log."
        )?;
        for (idx, found) in list {
            writeln!(err, "Indexed offset: {idx}, found log offset: {found}")?;
        }
    }
    for (file, list) in &f.non_consecutive {
        writeln!(err, "Non-consecutive offsets in {file}")?;
        for (a, b) in list {
            writeln!(err, "  {a} is followed by {b}")?;
        }
    }
    Ok(())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn dump_log(
    path: &Path,
    deep: bool,
    opts: &DumpOptions,
    findings: &mut Findings,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let log: LogWindow = RefCell::new(FileWindow::open(path)?);
    let len = log.run_len();
    let base = base_offset_of(path).unwrap_or(0);
    writeln!(out, "Log starting offset: {base}")?;
    let mut dump = LogDump {
        path,
        opts,
        findings,
        out,
        err,
        last_offset: base - 1,
    };
    let mut cursor = BatchCursor::new(&log);
    for step in cursor.by_ref() {
        let (pos, h) = match step {
            Ok(found) => found,
            Err((pos, e)) => {
                dump.explain_stop(&log, pos, e)?;
                break;
            }
        };
        if !dump.within_max_size(h.size(), pos)? {
            break;
        }
        let mut file = log.borrow_mut();
        let bytes = file.bytes(pos as u64, h.size())?;
        dump.print_batch_header(&h, pos, check_framing_and_crc(bytes).is_ok())?;
        if deep {
            dump.print_records(bytes, &h, pos)?;
        }
    }
    let pos = cursor.position();
    if pos < len {
        report_tail(&mut log.borrow_mut(), path, pos, len, dump.out)?;
    }
    Ok(())
}

/// One `.log` file being dumped: where output and findings go, and the last offset seen.
struct LogDump<'a> {
    path: &'a Path,
    opts: &'a DumpOptions,
    findings: &'a mut Findings,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    last_offset: i64,
}

impl LogDump<'_> {
    /// Why the walk stopped at `pos`, told as Kafka's dump tool tells it: a length field
    /// below its minimum, a batch over --max-message-size, or an invalid batch are reported;
    /// a batch cut off by the end of the file is the tail, reported after the walk.
    fn explain_stop(&mut self, log: &LogWindow, pos: usize, e: BatchError) -> std::io::Result<()> {
        assert!(pos < log.run_len(), "a walk stops inside the file");
        let left = log.run_len() - pos;
        if left < HEADER_SIZE_UP_TO_MAGIC || self.live_padding_at(log, pos)? {
            // The tail report says what it is (a live segment's padding is no corruption).
            return Ok(());
        }
        let declared =
            crate::format::batch::be_i32(log.borrow_mut().bytes(pos as u64, LOG_OVERHEAD)?, 8);
        if declared < 2 {
            let size = LOG_OVERHEAD as i64 + declared as i64;
            return writeln!(
                self.err,
                "Record batch at position {pos} declares size {size} (below the minimum 14)"
            );
        }
        let size = LOG_OVERHEAD + declared as usize;
        if size > left || !self.within_max_size(size, pos)? {
            return Ok(());
        }
        writeln!(self.err, "Invalid batch at position {pos}: {e}")
    }

    /// Whether the rest of the file from `pos` is a live active segment's zero padding.
    fn live_padding_at(&self, log: &LogWindow, pos: usize) -> std::io::Result<bool> {
        let len = log.run_len();
        is_live_padding(&mut log.borrow_mut(), pos, len)
    }

    /// Whether a batch of `size` bytes is within --max-message-size (reported if not, and
    /// the file fails the sanity check).
    fn within_max_size(&mut self, size: usize, pos: usize) -> std::io::Result<bool> {
        if size <= self.opts.max_message_size {
            return Ok(true);
        }
        writeln!(
            self.err,
            "Found a batch of {size} bytes at position {pos}, larger than --max-message-size {}",
            self.opts.max_message_size
        )?;
        self.findings.failed_sanity.push(absolute(self.path));
        Ok(false)
    }

    fn print_batch_header(
        &mut self,
        h: &BatchHeader,
        pos: usize,
        valid: bool,
    ) -> std::io::Result<()> {
        let horizon = match h.delete_horizon_ms() {
            Some(v) => format!("OptionalLong[{v}]"),
            None => "OptionalLong.empty".to_string(),
        };
        writeln!(
            self.out,
            "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} \
             producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} \
             isControl: {} deleteHorizonMs: {horizon} position: {pos} {}: {} size: {} \
             magic: {} compresscodec: {} crc: {} isvalid: {valid}",
            h.base_offset,
            h.last_offset(),
            h.records_count,
            h.base_sequence,
            h.last_sequence(),
            h.producer_id,
            h.producer_epoch,
            h.partition_leader_epoch,
            h.is_transactional(),
            h.is_control(),
            h.timestamp_type().name(),
            h.max_timestamp,
            h.size(),
            h.magic,
            h.compression(),
            h.crc,
        )
    }

    /// Every record of the batch at `pos`, noting offsets that do not follow the last one.
    fn print_records(&mut self, bytes: &[u8], h: &BatchHeader, pos: usize) -> std::io::Result<()> {
        let section = match RecordsSection::of(bytes, h) {
            Ok(s) => s,
            Err(e) => return writeln!(self.err, "Invalid records in batch at position {pos}: {e}"),
        };
        for r in section.iter() {
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    return writeln!(self.err, "Invalid record in batch at position {pos}: {e}")
                }
            };
            if r.offset != self.last_offset + 1 {
                self.findings
                    .non_consecutive
                    .entry(absolute(self.path))
                    .or_default()
                    .push((self.last_offset, r.offset));
            }
            self.last_offset = r.offset;
            self.print_record(&r, h)?;
        }
        Ok(())
    }

    fn print_record(
        &mut self,
        r: &crate::format::Record<'_>,
        h: &BatchHeader,
    ) -> std::io::Result<()> {
        let opts = self.opts;
        if opts.skip_record_metadata {
            write!(self.out, "|")?;
        } else {
            let header_keys: Vec<String> = r.headers.iter().map(|x| lossy(x.key)).collect();
            write!(
                self.out,
                "| offset: {} {}: {} keySize: {} valueSize: {} sequence: {} headerKeys: [{}]",
                r.offset,
                h.timestamp_type().name(),
                r.timestamp,
                r.key.map_or(-1, |k| k.len() as i64),
                r.value.map_or(-1, |v| v.len() as i64),
                r.sequence,
                header_keys.join(", ")
            )?;
        }
        let marker = h
            .is_control()
            .then(|| {
                r.key
                    .and_then(|k| crate::format::control::marker_of_record(k, r.value))
            })
            .flatten();
        // Kafka's DumpLogSegments names a control record's marker whenever it lists records.
        if let Some(m) = marker {
            let kind = if m.commit { "COMMIT" } else { "ABORT" };
            write!(
                self.out,
                " endTxnMarker: {kind} coordinatorEpoch: {}",
                m.coordinator_epoch
            )?;
        }
        if (opts.print_data_log || opts.skip_record_metadata) && !h.is_control() {
            if let Some(k) = r.key {
                write!(self.out, " key: {}", lossy(k))?;
            }
            if let Some(v) = r.value {
                write!(self.out, " payload: {}", lossy(v))?;
            }
        }
        writeln!(self.out)
    }
}

/// What follows the last whole batch: a live segment's zero padding, or invalid bytes.
fn report_tail(
    data: &mut FileWindow,
    path: &Path,
    pos: usize,
    len: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    if is_live_padding(data, pos, len)? {
        writeln!(
            out,
            "Found {} bytes of zero padding at the end of {name}: the rest of the last 4 KiB \
             block and the space allocated ahead of a live active segment (direct I/O writes \
             whole blocks into space allocated beforehand; trimmed when the segment is sealed)",
            len - pos
        )
    } else {
        writeln!(
            out,
            "Found {} invalid bytes at the end of {name}",
            len - pos
        )
    }
}

/// Zeros after the last batch, up to the end of a file whose size is a whole number of 4 KiB
/// blocks: what an open active segment looks like on disk (the last block's padding and the
/// space allocated ahead of the writes), not corruption. A tail longer than those could
/// be is never loaded.
fn is_live_padding(data: &mut FileWindow, pos: usize, file_len: usize) -> std::io::Result<bool> {
    const BLOCK: usize = 4096;
    assert!(pos <= file_len, "padding starts inside the file");
    let longest = BLOCK + crate::io::MAX_ALLOCATE_AHEAD as usize;
    if !file_len.is_multiple_of(BLOCK) || file_len - pos >= longest {
        return Ok(false);
    }
    Ok(data
        .bytes(pos as u64, file_len - pos)?
        .iter()
        .all(|&b| b == 0))
}

/// The bytes of the segment file next to `path` with another suffix (empty if unreadable).
fn read_sibling(path: &Path, suffix: &str) -> Vec<u8> {
    sibling(path, suffix)
        .and_then(|p| std::fs::read(p).ok())
        .unwrap_or_default()
}

/// Kafka's `--index-sanity-check` verdict line.
fn report_sanity(
    path: &Path,
    verdict: Result<(), String>,
    findings: &mut Findings,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    match verdict {
        Ok(()) => writeln!(out, "{} passed sanity check.", path.display()),
        Err(why) => {
            findings.failed_sanity.push(absolute(path));
            writeln!(err, "{} failed sanity check: {why}", path.display())
        }
    }
}

fn raw_offset_entries(bytes: &[u8], base: i64) -> Vec<(i64, i64)> {
    bytes
        .chunks_exact(offset_index::ENTRY_SIZE)
        .map(|e| {
            let (rel, pos) = offset_index::decode_entry(e);
            (base + rel as i64, pos as i64)
        })
        .collect()
}

fn dump_index(
    path: &Path,
    opts: &DumpOptions,
    findings: &mut Findings,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let base = base_offset_of(path).unwrap_or(0);
    let entries = raw_offset_entries(&bytes, base);
    if entries.is_empty() {
        writeln!(out, "{} is empty.", path.display())?;
        return Ok(());
    }
    if opts.index_sanity_check {
        let verdict = OffsetIndex::decode(base, &bytes, usize::MAX)
            .map(|_| ())
            .map_err(|e| e.to_string());
        return report_sanity(path, verdict, findings, out, err);
    }
    let log = sibling_log(path);
    for (i, &(offset, position)) in entries.iter().enumerate() {
        // A sparse preallocated index ends in zero entries: stop at the first one.
        if offset == base && i > 0 {
            break;
        }
        let log_offset = usize::try_from(position)
            .ok()
            .and_then(|p| header_at(&log, p))
            .map_or(-1, |h| h.last_offset());
        if log_offset != offset {
            findings
                .index_mismatches
                .entry(absolute(path))
                .or_default()
                .push((offset, log_offset));
        }
        if !opts.verify_index_only {
            writeln!(out, "offset: {offset} position: {position}")?;
        }
    }
    Ok(())
}

/// The batch holding `offset` in a `.log`: from the offset index's largest lower bound,
/// walking batch headers forward.
fn batch_holding(
    log: &Option<LogWindow>,
    offsets: &[(i64, i64)],
    offset: i64,
) -> Option<(usize, BatchHeader)> {
    let pos = offsets
        .iter()
        .take_while(|&&(o, _)| o <= offset)
        .last()
        .map_or(0, |&(_, p)| p.max(0) as usize);
    BatchCursor::at(log.as_ref()?, pos)
        .map_while(Result::ok)
        .find(|(_, h)| h.last_offset() >= offset)
}

/// A `.timeindex` entry and the timestamp of the entry before it.
struct TimeEntry {
    ts: i64,
    offset: i64,
    prev_ts: i64,
}

/// Checks an entry against the batch it points at (Kafka's DumpLogSegments rules): the
/// batch must end at the entry's offset and have the entry's timestamp as its largest, and
/// timestamps must grow. False when the batch cannot be read (the entry is skipped).
fn check_time_entry(
    log: &Option<LogWindow>,
    found: Option<(usize, BatchHeader)>,
    e: &TimeEntry,
    key: &str,
    findings: &mut Findings,
) -> bool {
    let (p, h) = match found {
        None => {
            let not_found = findings
                .shallow_not_found
                .entry(key.to_string())
                .or_default();
            not_found.push((e.offset, -1));
            return true;
        }
        Some((_, h)) if h.last_offset() != e.offset => {
            let not_found = findings
                .shallow_not_found
                .entry(key.to_string())
                .or_default();
            not_found.push((e.offset, h.last_offset()));
            return true;
        }
        Some(found) => found,
    };
    let Some(batch) = log.as_ref().map(|l| l.range(p, p + h.size())) else {
        return false;
    };
    if batch.len() != h.size() {
        return false;
    }
    let Ok(section) = RecordsSection::of(&batch, &h) else {
        return false;
    };
    let max = section
        .iter()
        .filter_map(|r| r.ok())
        .map(|r| r.timestamp)
        .max()
        .unwrap_or(-1);
    if max != e.ts {
        let mismatches = findings.time_mismatches.entry(key.to_string()).or_default();
        mismatches.push((e.ts, max));
    }
    if e.prev_ts >= e.ts {
        let out_of_order = findings.out_of_order.entry(key.to_string()).or_default();
        out_of_order.push((e.ts, e.prev_ts));
    }
    true
}

/// A `.txnindex` in the line format of Kafka's DumpLogSegments.
fn dump_txn_index(path: &Path, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let entries = crate::log::txn_index::AbortedTxns::parse_file(&bytes);
    let (entries, bad_at) = match entries {
        Ok(entries) => (entries, None),
        Err(at) => {
            let whole = crate::log::txn_index::AbortedTxns::parse_file(&bytes[..at]);
            (whole.unwrap_or_default(), Some(at))
        }
    };
    for e in entries {
        writeln!(
            out,
            "version: 0 producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
            e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset
        )?;
    }
    if let Some(at) = bad_at {
        writeln!(
            err,
            "Invalid transaction index entry at byte {at} of {}",
            path.display()
        )?;
    }
    Ok(())
}

fn dump_time_index(
    path: &Path,
    opts: &DumpOptions,
    findings: &mut Findings,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let base = base_offset_of(path).unwrap_or(0);
    if opts.index_sanity_check {
        let verdict = TimeIndex::decode(base, &bytes, usize::MAX)
            .map(|_| ())
            .map_err(|e| e.to_string());
        return report_sanity(path, verdict, findings, out, err);
    }
    let log = sibling_log(path);
    let offsets = raw_offset_entries(&read_sibling(path, INDEX_SUFFIX), base);
    let key = absolute(path);
    let mut prev_ts = -1i64;
    for (i, e) in bytes.chunks_exact(time_index::ENTRY_SIZE).enumerate() {
        let (ts, rel) = time_index::decode_entry(e);
        let offset = base + rel as i64;
        if offset == base && i > 0 {
            break;
        }
        let found = batch_holding(&log, &offsets, offset);
        let entry = TimeEntry {
            ts,
            offset,
            prev_ts,
        };
        if !check_time_entry(&log, found, &entry, &key, findings) {
            continue;
        }
        if !opts.verify_index_only {
            writeln!(out, "timestamp: {ts} offset: {offset}")?;
        }
        prev_ts = ts;
    }
    Ok(())
}
