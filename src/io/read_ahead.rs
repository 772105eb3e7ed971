//! Read-ahead for consumers: a `.log` file read sequentially (each read starting in the
//! second half of the previous one or right at its end, as a consumer's next fetch does)
//! keeps the next chunks in flight, each one device read into the shard's page cache, so the
//! next fetch finds its pages in memory instead of waiting for the device. Direct I/O gets no read-ahead from
//! the kernel; this is ours.
//!
//! Bounds: `WINDOW` bytes ahead of the reader per file (less when the cache is small), and
//! the shard's read-ahead grant (`PageCache::grant_read_ahead`, a quarter of the cache) over
//! all files together. A read elsewhere in the file cancels what is in flight (the pattern
//! stopped). A foreground read waits for the chunks it overlaps instead of reading the same
//! pages a second time.

use std::collections::VecDeque;
use std::rc::Rc;

use glommio::Task;

use super::cache::{read_through, SharedPageCache, PAGE};
use super::StorageFile;

/// Size of each read-ahead read (one device read).
const CHUNK: u64 = super::MAX_IO as u64;
/// Bytes kept in flight ahead of a sequential reader.
const WINDOW: u64 = 4 * CHUNK;
/// Reads in a row, each continuing the one before, that make a pattern sequential.
const SEQUENTIAL_AFTER: u32 = 3;
/// Reads shorter than this are no pattern: a lookup's walk over batch headers reads
/// growing windows from 32 KiB, one after another, and must not read ahead; a consumer's
/// fetches ask for its max.partition.fetch.bytes (Kafka's default: 1 MiB).
const MIN_PATTERN_READ: u64 = 256 << 10;

struct Ahead {
    start: u64,
    end: u64,
    task: Task<()>,
}

/// One file's read-ahead state (held by its `LogFile`).
#[derive(Default)]
pub struct ReadAhead {
    /// The last read: `[start, end)`.
    last: Option<(u64, u64)>,
    /// Reads in a row that continued the one before.
    streak: u32,
    /// Chunks in flight, in file order, disjoint.
    in_flight: VecDeque<Ahead>,
    /// Where read-ahead has been issued up to.
    issued_end: u64,
}

/// What a read-ahead read needs: the file, its pages' key, the cache and how far the file's
/// data is stable on the device (never past a write in flight or the staged tail).
pub struct Source<'a> {
    pub file: &'a Rc<dyn StorageFile>,
    pub file_id: u64,
    pub cache: &'a SharedPageCache,
    pub stable_end: u64,
}

impl ReadAhead {
    /// Before a foreground read of `[start, end)`: a read that does not continue the
    /// pattern cancels the chunks in flight; chunks it overlaps are waited for (their pages
    /// are then cached), chunks wholly behind it are dropped.
    pub async fn before_read(&mut self, start: u64, end: u64) {
        if !self.continues(start) {
            self.cancel();
            return;
        }
        while let Some(front) = self.in_flight.front() {
            if front.end <= start {
                self.in_flight.pop_front(); // behind the reader: no longer useful
            } else if front.start < end {
                let ahead = self.in_flight.pop_front().expect("front exists");
                ahead.task.await;
            } else {
                break;
            }
        }
    }

    /// After a foreground read of `[start, end)`: counts the pattern and, once it is
    /// sequential, issues chunks until `WINDOW` bytes past `end` are in flight or cached.
    pub fn after_read(&mut self, start: u64, end: u64, source: Source<'_>) {
        self.streak = match self.continues(start) {
            _ if end - start < MIN_PATTERN_READ => 0,
            true => self.streak + 1,
            false => 1,
        };
        self.last = Some((start, end));
        if self.streak < SEQUENTIAL_AFTER {
            return;
        }
        let budget = source.cache.borrow().budget_bytes();
        let window = WINDOW.min(budget / 32) / PAGE * PAGE;
        // Whole pages only: a chunk ending inside a page would share that page with the
        // next chunk, and the later one's extent would take it from the earlier one's.
        let until = (end + window).min(source.stable_end) / PAGE * PAGE;
        let mut from = self.issued_end.max(end.div_ceil(PAGE) * PAGE);
        while from < until {
            let len = CHUNK.min(until - from);
            if !source.cache.borrow_mut().grant_read_ahead(len) {
                break; // the shard has enough read-ahead in flight
            }
            self.in_flight.push_back(Ahead {
                start: from,
                end: from + len,
                task: spawn_chunk(&source, from, len),
            });
            from += len;
        }
        self.issued_end = from;
        assert!(
            self.issued_end.is_multiple_of(PAGE),
            "chunks hold whole pages"
        );
        // What is in flight lies ahead of this read (`before_read` waited for or dropped
        // the rest) and within the window: bounded in bytes. Not in chunks: a reader
        // tailing writes in flight gets a short chunk each time the stable end moves.
        let in_flight: u64 = self.in_flight.iter().map(|a| a.end - a.start).sum();
        assert!(
            in_flight <= WINDOW,
            "{in_flight} bytes read ahead, past the window"
        );
    }

    /// Whether a read at `start` continues the last one: it starts in the second half of
    /// it or right at its end (a fetch starts at the first batch the previous one did not
    /// return whole, and it returned at least half of what it read). A read again at the
    /// same start (a lookup re-reading the batch it found, a fetch after the lookup by time
    /// that found it) is not a pattern, nor is a random read that happens to land a little
    /// ahead of the last.
    fn continues(&self, start: u64) -> bool {
        self.last
            .is_some_and(|(a, b)| a < start && a + (b - a) / 2 <= start && start <= b)
    }

    /// Drops every chunk in flight (their reads are cancelled) and forgets the pattern.
    pub fn cancel(&mut self) {
        self.in_flight.clear();
        self.streak = 0;
        self.issued_end = 0;
    }
}

/// Reads `[pos, pos + len)` into the page cache in the background; gives the shard's grant
/// back when done (or cancelled).
fn spawn_chunk(source: &Source<'_>, pos: u64, len: u64) -> Task<()> {
    let file = source.file.clone();
    let cache = source.cache.clone();
    let id = source.file_id;
    let grant = Grant {
        cache: cache.clone(),
        bytes: len,
    };
    crate::tasks::spawn(async move {
        let _grant = grant;
        // A failed read is left to the foreground read, which reports it.
        let _ = read_through(&cache, file.as_ref(), id, pos, len as usize).await;
    })
}

/// A share of the shard's read-ahead grant, given back when dropped.
struct Grant {
    cache: SharedPageCache,
    bytes: u64,
}

impl Drop for Grant {
    fn drop(&mut self) {
        self.cache.borrow_mut().release_read_ahead(self.bytes);
    }
}
