//! Idempotent producers, as Kafka's `ProducerStateManager` keeps them: per producer id, its
//! epoch and the last 5 batches it wrote (sequence range, offsets). An append checks each
//! batch that carries a producer id against it:
//! - an older epoch than the producer's is refused (INVALID_PRODUCER_EPOCH);
//! - a batch identical in epoch and sequence range to one of the last 5 is a retry of a
//!   batch already stored: nothing is written and the original offsets are answered;
//! - otherwise the first sequence must follow the producer's last one (or be 0 with a new
//!   epoch), else OUT_OF_ORDER_SEQUENCE_NUMBER. A producer this partition has never seen
//!   may start anywhere (its earlier batches may have gone with retention), as in Kafka.
//!
//! The state survives restarts: a snapshot (`<offset>.snapshot`, FORMAT.md) is written when
//! a segment rolls and at a clean close, and at open the newest snapshot at or below the log
//! end is loaded and the batches after it are replayed from the log. Producers that have not
//! appended for `PRODUCER_ID_EXPIRATION_MS` (wall clock, not record timestamps: a producer
//! backfilling old data must not lose its state) are dropped when a snapshot is written.
//!
//! Bounded: a partition remembers at most `MAX_PRODUCERS_PER_PARTITION` producers, and the
//! partitions of one shard (one thread) about `MAX_PRODUCERS_PER_SHARD` together; a new one
//! beyond either evicts the partition's producer whose last append is oldest (Kafka 3.x
//! bounds the same state by expiring idle producer ids first). An evicted producer's next batch is accepted
//! as from a producer never seen; only a retry of a batch it wrote before its eviction is
//! no longer recognised. Without the bound, a client sending batches under ever new
//! producer ids grew the state by ~265 bytes per id for a day (53 MB per 200,000 ids).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::BatchHeader;
use crate::io::{OpenMode, Storage};

use super::batch_stream::{BatchStream, Next, BACKGROUND};
use super::file_names::{offset_of, segment_path, LOG_SUFFIX};
use super::segment::Segment;
pub use super::txn_index::CompletedTxn;
use super::txn_index::{AbortedTxn, AbortedTxns};

/// Batches remembered per producer (Kafka's NUM_BATCHES_TO_RETAIN).
pub const BATCHES_PER_PRODUCER: usize = 5;
/// Kafka's producer.id.expiration.ms default: one day.
pub const PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;
/// Producers one partition remembers at most (about 0.5 MB of state).
pub const MAX_PRODUCERS_PER_PARTITION: usize = 2000;
/// Producers the open partitions of one shard remember together (about 27 MB); beyond it a
/// partition adding one evicts its own longest idle (each keeps at least one).
pub const MAX_PRODUCERS_PER_SHARD: usize = 100_000;

thread_local! {
    /// Producers held by the shard's live states (`count_on_shard`), this thread's.
    static SHARD_PRODUCERS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Producers the live states of this thread's partitions hold now.
pub fn shard_producers() -> usize {
    SHARD_PRODUCERS.with(std::cell::Cell::get)
}
pub use super::file_names::SNAPSHOT_SUFFIX;
/// Snapshots kept besides the newest (older ones are removed when a new one is written).
const OLDER_SNAPSHOTS_KEPT: usize = 1;
/// Version 1 adds per-producer lines (epoch without batches, open transactions).
const SNAPSHOT_VERSION: &str = "1";
const SNAPSHOT_VERSION_0: &str = "0";

/// One batch a producer wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// The batch's max timestamp (for expiration, and answered again for a retry).
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Producer {
    epoch: i16,
    batches: VecDeque<ProducerBatch>,
    /// Wall-clock ms of its last append (replayed batches count as appended at the replay).
    last_append_ms: i64,
    /// First offset of its open transaction on this partition (Kafka's
    /// currentTxnFirstOffset): set by its first transactional batch, cleared by a marker.
    txn_first_offset: Option<i64>,
}

/// A producer as DescribeProducers reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_sequence: i32,
    pub last_timestamp: i64,
    pub txn_first_offset: i64,
}

/// What an append of one batch means for its producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SequenceCheck {
    /// No producer id: nothing to check or remember.
    NotIdempotent,
    /// New data, to be remembered once written.
    Append,
    /// A retry of a batch already stored at these offsets.
    Duplicate(ProducerBatch),
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ProducerState {
    producers: BTreeMap<i64, Producer>,
    /// (last append ms, producer id) of every producer: the oldest is evicted first.
    by_age: BTreeSet<(i64, i64)>,
    /// A partition's live state: its producers count against the shard's bound.
    on_shard: bool,
    /// (first offset, producer id) of every open transaction: the first is the log's first
    /// unstable offset.
    open_txns: BTreeSet<(i64, i64)>,
}

/// A copy is never a partition's live state.
impl Clone for ProducerState {
    fn clone(&self) -> Self {
        ProducerState {
            producers: self.producers.clone(),
            by_age: self.by_age.clone(),
            on_shard: false,
            open_txns: self.open_txns.clone(),
        }
    }
}

impl Drop for ProducerState {
    fn drop(&mut self) {
        self.account(self.producers.len(), 0);
    }
}

/// Whether `next` follows `last` (sequences wrap from i32::MAX to 0).
fn in_sequence(last: i32, next: i32) -> bool {
    next as i64 == last as i64 + 1 || (last == i32::MAX && next == 0)
}

impl ProducerState {
    /// Makes this a partition's live state: its producers count against (and are bounded
    /// by) the shard's `MAX_PRODUCERS_PER_SHARD`.
    pub fn count_on_shard(&mut self) {
        if !self.on_shard {
            self.on_shard = true;
            self.account(0, self.producers.len());
            self.evict_beyond_bound(-1);
        }
    }

    /// The shard's count follows this live state from `before` to `after` producers.
    fn account(&self, before: usize, after: usize) {
        if self.on_shard && before != after {
            SHARD_PRODUCERS.with(|n| n.set((n.get() + after).saturating_sub(before)));
        }
    }

    fn over_bound(&self) -> bool {
        self.producers.len() > MAX_PRODUCERS_PER_PARTITION
            || (self.on_shard
                && self.producers.len() > 1
                && shard_producers() > MAX_PRODUCERS_PER_SHARD)
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Checks a batch (base offset not yet assigned) against its producer's state.
    pub fn check(&self, h: &BatchHeader) -> Result<SequenceCheck> {
        if h.producer_id < 0 {
            return Ok(SequenceCheck::NotIdempotent);
        }
        let Some(p) = self.producers.get(&h.producer_id) else {
            return Ok(SequenceCheck::Append);
        };
        let (epoch, first_seq) = (h.producer_epoch, h.base_sequence);
        if epoch < p.epoch {
            return Err(Error::InvalidProducerEpoch {
                producer_id: h.producer_id,
                epoch,
                current: p.epoch,
            });
        }
        if !h.is_transactional() && p.txn_first_offset.is_some() {
            return Err(Error::InvalidTxnState {
                producer_id: h.producer_id,
                why: "a non-transactional batch while its transaction is open",
            });
        }
        if epoch == p.epoch {
            if let Some(d) = p
                .batches
                .iter()
                .find(|b| b.first_seq == first_seq && b.last_seq == h.last_sequence())
            {
                return Ok(SequenceCheck::Duplicate(*d));
            }
        }
        let last_seq = p.batches.back().map_or(-1, |b| b.last_seq);
        let fits = if epoch > p.epoch {
            first_seq == 0
        } else {
            p.batches.is_empty() || in_sequence(last_seq, first_seq)
        };
        if !fits {
            return Err(Error::OutOfOrderSequence {
                producer_id: h.producer_id,
                epoch,
                expected: if epoch > p.epoch {
                    0
                } else {
                    last_seq.wrapping_add(1)
                },
                found: first_seq,
            });
        }
        Ok(SequenceCheck::Append)
    }

    /// Checks every batch of one append in order, as if the earlier ones were written: the
    /// first retry found (Kafka answers a retry with the original batch's offsets and
    /// writes nothing), or an error for the first batch out of order.
    pub fn check_all<'h>(
        &self,
        headers: impl IntoIterator<Item = &'h BatchHeader>,
    ) -> Result<Option<ProducerBatch>> {
        let mut scratch = ProducerState::default();
        for h in headers {
            let state = match scratch.producers.contains_key(&h.producer_id) {
                true => &scratch,
                false => self,
            };
            match state.check(h)? {
                SequenceCheck::Duplicate(original) => return Ok(Some(original)),
                SequenceCheck::NotIdempotent => {}
                SequenceCheck::Append => {
                    if let Some(p) = self.producers.get(&h.producer_id) {
                        scratch
                            .producers
                            .entry(h.producer_id)
                            .or_insert_with(|| p.clone());
                    }
                    scratch.record(h, 0);
                }
            }
        }
        Ok(None)
    }

    /// Remembers a written batch (`h` with its assigned offsets and max timestamp).
    pub fn record(&mut self, h: &BatchHeader, now_ms: i64) {
        if h.producer_id < 0 {
            return;
        }
        let id = h.producer_id;
        let before = self.producers.len();
        let opens_txn = h.is_transactional() && !self.has_open_txn(id);
        if opens_txn {
            self.open_txns.insert((h.base_offset, id));
        }
        let p = self.touch(id, h.producer_epoch, now_ms);
        if opens_txn {
            p.txn_first_offset = Some(h.base_offset);
        }
        if h.producer_epoch != p.epoch {
            p.epoch = h.producer_epoch;
            p.batches.clear();
        }
        if p.batches.len() == BATCHES_PER_PRODUCER {
            p.batches.pop_front();
        }
        p.batches.push_back(ProducerBatch {
            first_seq: h.base_sequence,
            last_seq: h.last_sequence(),
            first_offset: h.base_offset,
            last_offset: h.last_offset(),
            timestamp: h.max_timestamp,
        });
        assert!(p.batches.len() <= BATCHES_PER_PRODUCER);
        self.account(before, self.producers.len());
        self.evict_beyond_bound(id);
    }

    /// Producer `id` (new at `epoch` when unknown), its last append moved up to `now_ms`.
    fn touch(&mut self, id: i64, epoch: i16, now_ms: i64) -> &mut Producer {
        let p = self.producers.entry(id).or_insert(Producer {
            epoch,
            batches: VecDeque::new(),
            last_append_ms: now_ms,
            txn_first_offset: None,
        });
        let aged_from = p.last_append_ms;
        p.last_append_ms = p.last_append_ms.max(now_ms);
        self.by_age.remove(&(aged_from, id));
        self.by_age.insert((p.last_append_ms, id));
        p
    }

    /// Applies a written batch (`bytes`, offsets assigned): a marker ends its producer's
    /// transaction, any other batch is remembered. The one path for appends and replays.
    pub fn apply(&mut self, h: &BatchHeader, bytes: &[u8], now_ms: i64) -> Option<CompletedTxn> {
        if !h.is_control() {
            self.record(h, now_ms);
            return None;
        }
        let marker = crate::format::control::read_marker(bytes)?;
        self.complete(h, marker.commit, now_ms)
    }

    /// Checks a marker for `producer_id` at `epoch` before it is written: an older epoch
    /// than the producer's is a zombie coordinator's or producer's (INVALID_PRODUCER_EPOCH).
    pub fn check_marker(&self, producer_id: i64, epoch: i16) -> Result<()> {
        match self.producers.get(&producer_id) {
            Some(p) if epoch < p.epoch => Err(Error::InvalidProducerEpoch {
                producer_id,
                epoch,
                current: p.epoch,
            }),
            _ => Ok(()),
        }
    }

    /// A written marker (`h`): the producer's epoch rises to the marker's (fencing older
    /// instances on this partition) and its open transaction, if any, ends.
    fn complete(&mut self, h: &BatchHeader, commit: bool, now_ms: i64) -> Option<CompletedTxn> {
        let id = h.producer_id;
        let before = self.producers.len();
        let p = self.touch(id, h.producer_epoch, now_ms);
        if h.producer_epoch > p.epoch {
            p.epoch = h.producer_epoch;
            p.batches.clear();
        }
        let first = p.txn_first_offset.take();
        self.account(before, self.producers.len());
        let first = first?;
        self.open_txns.remove(&(first, id));
        // A transaction's records come before its marker.
        assert!(first < h.base_offset);
        Some(CompletedTxn {
            producer_id: id,
            first_offset: first,
            last_offset: h.base_offset,
            aborted: !commit,
        })
    }

    /// Every producer the partition remembers (Kafka's DescribeProducers): id, epoch, last
    /// sequence (-1 none), last batch's timestamp (-1 none) and open transaction's first
    /// offset (-1 none).
    pub fn describe(&self) -> Vec<ActiveProducer> {
        self.producers
            .iter()
            .map(|(&id, p)| ActiveProducer {
                producer_id: id,
                epoch: p.epoch,
                last_sequence: p.batches.back().map_or(-1, |b| b.last_seq),
                last_timestamp: p.batches.back().map_or(-1, |b| b.timestamp),
                txn_first_offset: p.txn_first_offset.unwrap_or(-1),
            })
            .collect()
    }

    /// Whether `producer_id` has a transaction open on this partition.
    pub fn has_open_txn(&self, producer_id: i64) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|p| p.txn_first_offset.is_some())
    }

    /// The first offset of the earliest open transaction (Kafka's first unstable offset).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.open_txns.first().map(|&(offset, _)| offset)
    }

    /// Forgets the producers idle longest (never `keep`) while over a bound.
    fn evict_beyond_bound(&mut self, keep: i64) {
        while self.over_bound() {
            let evictable = |id: &i64| {
                *id != keep
                    && self
                        .producers
                        .get(id)
                        .is_some_and(|p| p.txn_first_offset.is_none())
            };
            let Some(&oldest) = self.by_age.iter().find(|(_, id)| evictable(id)) else {
                break;
            };
            self.by_age.remove(&oldest);
            self.producers.remove(&oldest.1);
            self.account(self.producers.len() + 1, self.producers.len());
        }
        assert_eq!(self.by_age.len(), self.producers.len());
    }

    /// Forgets producers that have not appended within the expiration.
    pub fn expire(&mut self, now_ms: i64) {
        let before = self.producers.len();
        // A producer with an open transaction never expires (Kafka's rule).
        let live = |p: &Producer| {
            now_ms - p.last_append_ms < PRODUCER_ID_EXPIRATION_MS || p.txn_first_offset.is_some()
        };
        self.producers.retain(|_, p| live(p));
        let producers = &self.producers;
        self.by_age.retain(|(_, id)| producers.contains_key(id));
        self.account(before, self.producers.len());
        assert_eq!(self.by_age.len(), self.producers.len());
    }

    fn encode(&self) -> String {
        let mut out = format!("{SNAPSHOT_VERSION}\n");
        for (id, p) in &self.producers {
            let txn = p.txn_first_offset.unwrap_or(-1);
            out.push_str(&format!("p {id} {} {} {txn}\n", p.epoch, p.last_append_ms));
            for b in &p.batches {
                out.push_str(&format!(
                    "b {id} {} {} {} {} {}\n",
                    b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp
                ));
            }
        }
        out
    }

    /// Parses a snapshot file's text; `None` if it is not one (fuzzed in fuzz/).
    pub fn decode(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        let mut state = ProducerState::default();
        match lines.next()? {
            SNAPSHOT_VERSION => lines.try_for_each(|l| state.decode_line(l))?,
            SNAPSHOT_VERSION_0 => lines.try_for_each(|l| state.decode_v0_line(l))?,
            _ => return None,
        }
        state.by_age = state
            .producers
            .iter()
            .map(|(id, p)| (p.last_append_ms, *id))
            .collect();
        state.open_txns = state
            .producers
            .iter()
            .filter_map(|(id, p)| Some((p.txn_first_offset?, *id)))
            .collect();
        // A snapshot from before the bound may hold more.
        state.evict_beyond_bound(-1);
        Some(state)
    }

    /// One line of a version 1 snapshot: `p id epoch appended txn` or `b id first_seq
    /// last_seq first_offset last_offset timestamp` (after its producer's `p` line).
    fn decode_line(&mut self, line: &str) -> Option<()> {
        let (kind, rest) = line.split_once(' ')?;
        let f: Vec<i64> = rest
            .split(' ')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        match (kind, &f[..]) {
            ("p", &[id, epoch, appended, txn]) => {
                let producer = Producer {
                    epoch: i16::try_from(epoch).ok()?,
                    batches: VecDeque::new(),
                    last_append_ms: appended,
                    txn_first_offset: (txn >= 0).then_some(txn),
                };
                self.producers.insert(id, producer).is_none().then_some(())
            }
            ("b", &[id, first_seq, last_seq, first_offset, last_offset, timestamp]) => {
                let p = self.producers.get_mut(&id)?;
                push_batch(
                    p,
                    [first_seq, last_seq, first_offset, last_offset, timestamp],
                )
            }
            _ => None,
        }
    }

    /// One line of a version 0 snapshot: a batch with its producer's epoch and last append.
    fn decode_v0_line(&mut self, line: &str) -> Option<()> {
        let f: Vec<i64> = line
            .split(' ')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let [id, epoch, first_seq, last_seq, first_offset, last_offset, timestamp, appended] =
            f[..]
        else {
            return None;
        };
        let p = self.producers.entry(id).or_insert(Producer {
            epoch: i16::try_from(epoch).ok()?,
            batches: VecDeque::new(),
            last_append_ms: appended,
            txn_first_offset: None,
        });
        push_batch(
            p,
            [first_seq, last_seq, first_offset, last_offset, timestamp],
        )
    }
}

/// Adds a decoded batch `[first_seq, last_seq, first_offset, last_offset, timestamp]`.
fn push_batch(
    p: &mut Producer,
    [first_seq, last_seq, first, last, timestamp]: [i64; 5],
) -> Option<()> {
    if p.batches.len() == BATCHES_PER_PRODUCER || first > last {
        return None;
    }
    p.batches.push_back(ProducerBatch {
        first_seq: i32::try_from(first_seq).ok()?,
        last_seq: i32::try_from(last_seq).ok()?,
        first_offset: first,
        last_offset: last,
        timestamp,
    });
    Some(())
}

fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    segment_path(dir, offset, SNAPSHOT_SUFFIX)
}

/// Snapshot offsets in the directory, ascending.
fn snapshot_offsets(storage: &dyn Storage, dir: &Path) -> Result<Vec<i64>> {
    let names = storage.list(dir).map_err(|e| Error::io("list", dir, e))?;
    let mut offsets: Vec<i64> = names
        .iter()
        .filter_map(|n| offset_of(n, SNAPSHOT_SUFFIX))
        .collect();
    offsets.sort_unstable();
    Ok(offsets)
}

/// Writes the state as of `offset` (everything below it is in it), then removes older
/// snapshots but the newest `OLDER_SNAPSHOTS_KEPT`.
pub async fn write_snapshot(
    storage: &dyn Storage,
    dir: &Path,
    offset: i64,
    state: &mut ProducerState,
    now_ms: i64,
) -> Result<()> {
    state.expire(now_ms);
    let path = snapshot_path(dir, offset);
    storage
        .write_file_atomic(&path, state.encode().into_bytes())
        .await
        .map_err(|e| Error::io("write", &path, e))?;
    let offsets = snapshot_offsets(storage, dir)?;
    let older: Vec<i64> = offsets.into_iter().filter(|&o| o < offset).collect();
    for &o in &older[..older.len().saturating_sub(OLDER_SNAPSHOTS_KEPT)] {
        let old = snapshot_path(dir, o);
        if let Err(e) = storage.remove(&old).await {
            tracing::warn!(file = %old.display(), error = %e, "removing an old producer snapshot");
        }
    }
    Ok(())
}

/// The state at the log end: the newest readable snapshot at or below it, then every batch
/// after the snapshot replayed from the segments. Without any snapshot (a data directory
/// from before snapshots, or all unreadable) only the last two segments are replayed, as
/// Kafka does, so an upgrade does not read the whole log at start.
/// The producer state at `log_end` and the partition's aborted transactions: the newest
/// snapshot at or below it, then the batches after it replayed (with the `.txnindex` files
/// of the segments before it: `txn_index`'s module comment).
pub async fn rebuild(
    storage: &dyn Storage,
    dir: &Path,
    segments: &[Segment],
    log_end: i64,
) -> Result<(ProducerState, AbortedTxns)> {
    let (mut state, from) = match newest_snapshot(storage, dir, log_end).await? {
        Some(found) => found,
        None => {
            let last_two = segments.len().saturating_sub(2);
            (
                ProducerState::default(),
                segments[last_two..].first().map_or(0, |s| s.base_offset()),
            )
        }
    };
    let mut aborted = AbortedTxns::default();
    for seg in segments.iter().filter(|s| s.base_offset() < from) {
        aborted.read_segment(storage, dir, seg.base_offset()).await;
    }
    aborted.truncate_from(from);
    let mut replayed = 0usize;
    let now = crate::time::now_ms();
    for seg in segments.iter().filter(|s| s.next_offset() > from) {
        let into = (&mut state, &mut aborted);
        replayed += replay_segment(storage, dir, seg, from, now, into).await?;
    }
    aborted.truncate_from(log_end);
    tracing::debug!(dir = %dir.display(), from, replayed, producers = state.len(), aborted = aborted.len(), "producer state rebuilt");
    Ok((state, aborted))
}

async fn newest_snapshot(
    storage: &dyn Storage,
    dir: &Path,
    log_end: i64,
) -> Result<Option<(ProducerState, i64)>> {
    for offset in snapshot_offsets(storage, dir)?.into_iter().rev() {
        let path = snapshot_path(dir, offset);
        if offset > log_end {
            // Written before a crash cut the log shorter: describes offsets that are gone.
            let _ = storage.remove(&path).await;
            continue;
        }
        let text = storage.read_file(&path).await.ok();
        match text.and_then(|t| ProducerState::decode(&String::from_utf8(t).ok()?)) {
            Some(state) => return Ok(Some((state, offset))),
            None => {
                tracing::warn!(file = %path.display(), "unreadable producer snapshot; using an older one")
            }
        }
    }
    Ok(None)
}

/// Replays the batch headers of one segment at or above `from`; returns how many.
async fn replay_segment(
    storage: &dyn Storage,
    dir: &Path,
    seg: &Segment,
    from: i64,
    now_ms: i64,
    (state, aborted): (&mut ProducerState, &mut AbortedTxns),
) -> Result<usize> {
    let path = segment_path(dir, seg.base_offset(), LOG_SUFFIX);
    let file = storage
        .open(&path, OpenMode::ReadOnly)
        .await
        .map_err(|e| Error::io("open", &path, e))?;
    let mut stream = BatchStream::new(file, &path, seg.size(), BACKGROUND);
    let mut n = 0;
    while let Next::Batch { position, bytes } = stream.next().await? {
        let h = BatchHeader::parse(bytes).map_err(|e| {
            Error::corruption(&path, position, format!("producer state replay: {e}"))
        })?;
        if h.base_offset >= from {
            let done = state.apply(&h, bytes, now_ms);
            if let Some(e) = done.and_then(|d| AbortedTxn::of(&d, state.first_unstable_offset())) {
                aborted.push(e);
            }
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BatchBuilder, RecordSpec};

    fn batch(pid: i64, epoch: i16, seq: i32, records: usize, base: i64) -> BatchHeader {
        let mut b = BatchBuilder::new(256);
        for _ in 0..records {
            b.push(RecordSpec::new(None, Some(b"v")).timestamp(1_000));
        }
        let mut bytes = b.build();
        crate::format::batch::set_producer(&mut bytes, pid, epoch, seq);
        crate::format::batch::set_base_offset(&mut bytes, base);
        BatchHeader::parse(&bytes).unwrap()
    }

    #[test]
    fn producers_beyond_the_bound_evict_the_longest_idle_first() {
        let mut s = ProducerState::default();
        let bound = MAX_PRODUCERS_PER_PARTITION as i64;
        // Producer 0 keeps appending; every other id appends once, one ms apart.
        for id in 0..bound * 3 {
            s.record(&batch(id, 0, 0, 1, id), 1_000 + id);
            if id % 100 == 0 {
                s.record(&batch(0, 0, (id / 100) as i32 + 1, 1, id), 1_000 + id);
            }
        }
        assert_eq!(s.len(), MAX_PRODUCERS_PER_PARTITION);
        assert!(s.producers.contains_key(&0), "an active producer is kept");
        assert!(s.producers.contains_key(&(bound * 3 - 1)));
        assert!(!s.producers.contains_key(&1), "the longest idle went first");
        // A snapshot round trip keeps the bound and the ages.
        let back = ProducerState::decode(&s.encode()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn the_partitions_of_a_shard_share_one_bound() {
        let partitions = MAX_PRODUCERS_PER_SHARD / MAX_PRODUCERS_PER_PARTITION + 10;
        let mut states: Vec<ProducerState> = (0..partitions)
            .map(|_| {
                let mut s = ProducerState::default();
                s.count_on_shard();
                s
            })
            .collect();
        let mut id = 0;
        for s in states.iter_mut() {
            for _ in 0..MAX_PRODUCERS_PER_PARTITION {
                s.record(&batch(id, 0, 0, 1, id), 1_000 + id);
                id += 1;
            }
        }
        let held: usize = states.iter().map(ProducerState::len).sum();
        assert_eq!(held, shard_producers());
        assert!(held <= MAX_PRODUCERS_PER_SHARD + partitions, "{held}");
        assert!(states.iter().all(|s| !s.is_empty()));
        // A copy does not count; dropping the live states gives their share back.
        let copy = states[0].clone();
        assert_eq!(shard_producers(), held);
        drop((copy, states));
        assert_eq!(shard_producers(), 0);
    }

    /// The figure of the closing note: heap per 100,000 producer ids, unbounded vs bounded
    /// (run with --nocapture).
    #[test]
    fn heap_held_by_100k_producer_ids_is_bounded() {
        let before = crate::alloc_guard::this_thread_heap();
        let mut s = ProducerState::default();
        for id in 0..100_000 {
            s.record(&batch(id, 0, 0, 1, id), 1_000 + id);
        }
        let held = crate::alloc_guard::this_thread_heap() - before;
        eprintln!(
            "100,000 producer ids: {} producers kept, {held} heap bytes held",
            s.len()
        );
        assert!(held < 2 << 20, "{held} bytes for {} producers", s.len());
    }

    #[test]
    fn retries_are_duplicates_and_gaps_are_out_of_order() {
        let mut s = ProducerState::default();
        let first = batch(7, 0, 0, 3, 0);
        assert_eq!(s.check(&first).unwrap(), SequenceCheck::Append);
        s.record(&first, 1_000);
        let dup = s.check(&batch(7, 0, 0, 3, 99)).unwrap();
        assert!(
            matches!(dup, SequenceCheck::Duplicate(b) if b.first_offset == 0 && b.last_offset == 2)
        );
        assert_eq!(
            s.check(&batch(7, 0, 3, 1, 3)).unwrap(),
            SequenceCheck::Append
        );
        let gap = s.check(&batch(7, 0, 5, 1, 3)).unwrap_err();
        assert!(
            matches!(
                gap,
                Error::OutOfOrderSequence {
                    expected: 3,
                    found: 5,
                    ..
                }
            ),
            "{gap}"
        );
        // A new epoch starts at 0; an older one is fenced.
        assert!(s.check(&batch(7, 1, 4, 1, 3)).is_err());
        assert_eq!(
            s.check(&batch(7, 1, 0, 1, 3)).unwrap(),
            SequenceCheck::Append
        );
        s.record(&batch(7, 1, 0, 1, 3), 1_000);
        assert!(matches!(
            s.check(&batch(7, 0, 3, 1, 4)).unwrap_err(),
            Error::InvalidProducerEpoch { current: 1, .. }
        ));
        // Not idempotent, or unknown: accepted as is.
        assert_eq!(
            s.check(&batch(-1, -1, -1, 1, 4)).unwrap(),
            SequenceCheck::NotIdempotent
        );
        assert_eq!(
            s.check(&batch(8, 0, 42, 1, 4)).unwrap(),
            SequenceCheck::Append
        );
    }

    #[test]
    fn only_the_last_five_batches_are_remembered_and_snapshots_round_trip() {
        let mut s = ProducerState::default();
        for i in 0..8 {
            s.record(&batch(1, 0, i, 1, i as i64), 1_000);
        }
        assert!(matches!(
            s.check(&batch(1, 0, 2, 1, 9)),
            Err(Error::OutOfOrderSequence { .. })
        ));
        assert!(matches!(
            s.check(&batch(1, 0, 3, 1, 9)),
            Ok(SequenceCheck::Duplicate(_))
        ));
        assert_eq!(ProducerState::decode(&s.encode()), Some(s.clone()));
        assert_eq!(ProducerState::decode("0\n1 2 3\n"), None);
        s.expire(1_000 + PRODUCER_ID_EXPIRATION_MS - 1);
        assert_eq!(s.len(), 1);
        assert_eq!(ProducerState::decode("7\n"), None);
        s.expire(1_000 + PRODUCER_ID_EXPIRATION_MS);
        assert!(s.is_empty());
    }

    #[test]
    fn sequences_wrap_at_i32_max() {
        assert!(in_sequence(i32::MAX, 0));
        assert!(in_sequence(4, 5));
        assert!(!in_sequence(4, 6));
    }
}
