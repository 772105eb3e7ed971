//! The process's allocator: the system allocator, except that an allocation of 1 GiB or
//! more is an address-space reservation (`mmap` with MAP_NORESERVE), committed only as it
//! is touched.
//!
//! Why: the kafka-protocol crate decodes an array by first calling
//! `Vec::with_capacity(count)` with the count a client sent. A 30-byte Kafka request
//! declaring 2^31 elements asked for 154 GB; the allocation failed and the process aborted,
//! taking every client down with it (found by a hostile-input test). With this allocator
//! the reservation succeeds, the decoder fails at once on the missing elements (each takes
//! at least one byte of the frame), the reservation is released, and the connection gets
//! Kafka's answer to an unparseable request (it is closed). Nothing of shardlog's own
//! allocates sizes a client controls (its decoders check counts against the bytes present),
//! so ordinary allocations never take this path.
//!
//! It also counts the live heap (bytes and blocks) so a leak shows as a metric before it
//! shows as an OOM. Each thread adds to a counter of its own (one cache line each, so the
//! shards never contend); the live heap is the sum over them. A block freed on another
//! thread than the one that allocated it moves the two counters, never the sum.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering::Relaxed};

/// Allocations at least this large are reservations.
const RESERVE_FROM: usize = 1 << 30;
const PAGE: usize = 4096;

pub struct ReservingAllocator;

/// Threads beyond the first `SLOTS - 1` share the last counter (a server has a thread per
/// shard and a few more; the test harness a thread per test).
const SLOTS: usize = 1024;

#[repr(align(64))]
struct Slot {
    bytes: AtomicI64,
    blocks: AtomicI64,
    /// Blocks ever allocated (a counter: what a request costs the allocator).
    allocations: AtomicI64,
}

#[allow(clippy::declare_interior_mutable_const)] // the array's initialiser, not shared
const EMPTY: Slot = Slot {
    bytes: AtomicI64::new(0),
    blocks: AtomicI64::new(0),
    allocations: AtomicI64::new(0),
};
static SLOT_COUNTS: [Slot; SLOTS] = [EMPTY; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // No destructor: usable from the allocator at any point of a thread's life.
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_slot() -> &'static Slot {
    let idx = MY_SLOT
        .try_with(|s| {
            if s.get() == usize::MAX {
                s.set(NEXT_SLOT.fetch_add(1, Relaxed).min(SLOTS - 1));
            }
            s.get()
        })
        .unwrap_or(SLOTS - 1);
    &SLOT_COUNTS[idx]
}

fn count(bytes: i64, blocks: i64) {
    let slot = my_slot();
    slot.bytes.fetch_add(bytes, Relaxed);
    if blocks != 0 {
        slot.blocks.fetch_add(blocks, Relaxed);
    }
    if blocks > 0 {
        slot.allocations.fetch_add(blocks, Relaxed);
    }
}

/// Net heap bytes this thread allocated (for measurements within one thread; meaningful
/// while the thread has a counter of its own).
pub fn this_thread_heap() -> i64 {
    my_slot().bytes.load(Relaxed)
}

/// The process's live heap now: (bytes, blocks) allocated and not yet freed.
pub fn live_heap() -> (u64, u64) {
    let (bytes, blocks) = SLOT_COUNTS.iter().fold((0i64, 0i64), |(b, n), s| {
        (b + s.bytes.load(Relaxed), n + s.blocks.load(Relaxed))
    });
    (bytes.max(0) as u64, blocks.max(0) as u64)
}

/// Heap blocks the process has allocated since it started (a realloc is not counted).
pub fn allocations() -> u64 {
    let total: i64 = SLOT_COUNTS
        .iter()
        .map(|s| s.allocations.load(Relaxed))
        .sum();
    total.max(0) as u64
}

fn reserved(layout: &Layout) -> bool {
    layout.size() >= RESERVE_FROM && layout.align() <= PAGE
}

// SAFETY: every method forwards to `System` or to mmap/munmap/mremap with the layout's
// size, so the pointers returned are valid, aligned (page-aligned reservations only for
// alignments up to a page) and freed by the method that matches how they were made.
unsafe impl GlobalAlloc for ReservingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.alloc_uncounted(layout);
        if !p.is_null() {
            count(layout.size() as i64, 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64), -1);
        self.dealloc_uncounted(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = if reserved(&layout) {
            // Anonymous mappings read as zeros.
            self.alloc_uncounted(layout)
        } else {
            System.alloc_zeroed(layout)
        };
        if !p.is_null() {
            count(layout.size() as i64, 1);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let fresh = if !reserved(&layout) && !reserved(&new_layout) {
            System.realloc(ptr, layout, new_size)
        } else {
            let fresh = self.alloc_uncounted(new_layout);
            if !fresh.is_null() {
                std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
                self.dealloc_uncounted(ptr, layout);
            }
            fresh
        };
        if !fresh.is_null() {
            count(new_size as i64 - layout.size() as i64, 0);
        }
        fresh
    }
}

impl ReservingAllocator {
    /// # Safety
    /// As `GlobalAlloc::alloc`.
    unsafe fn alloc_uncounted(&self, layout: Layout) -> *mut u8 {
        if !reserved(&layout) {
            return System.alloc(layout);
        }
        // SAFETY: an anonymous private mapping; no file, no fixed address.
        let p = libc::mmap(
            std::ptr::null_mut(),
            layout.size(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            std::ptr::null_mut()
        } else {
            p.cast()
        }
    }

    /// # Safety
    /// As `GlobalAlloc::dealloc`, for a block from `alloc_uncounted`.
    unsafe fn dealloc_uncounted(&self, ptr: *mut u8, layout: Layout) {
        if !reserved(&layout) {
            return System.dealloc(ptr, layout);
        }
        // SAFETY: `ptr` came from the mmap above with this size.
        libc::munmap(ptr.cast(), layout.size());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_huge_capacity_is_a_reservation_not_an_abort() {
        // 160 GB: more than this machine's RAM and swap; untouched, it costs nothing.
        let v: Vec<[u8; 80]> = Vec::with_capacity(2_000_000_000);
        assert!(v.capacity() >= 2_000_000_000);
        let mut grown: Vec<u8> = Vec::with_capacity(1 << 20);
        grown.extend(std::iter::repeat_n(7u8, 1 << 20));
        grown.reserve(1 << 30);
        assert_eq!(
            grown[(1 << 20) - 1],
            7,
            "contents survive the move to a reservation"
        );
    }

    #[test]
    fn the_live_heap_counts_what_is_held() {
        // This thread's own counter: other tests allocate at once on theirs.
        let mine = super::this_thread_heap;
        let before = mine();
        let mut held: Vec<u8> = vec![1; 1 << 20];
        assert_eq!(mine() - before, 1 << 20);
        held.reserve_exact(3 << 20);
        assert_eq!(mine() - before, held.capacity() as i64);
        drop(held);
        let (allocated, count) = (super::allocations(), super::allocations);
        let boxed = Box::new(1u64);
        assert!(count() > allocated, "a new block is counted");
        drop(boxed);
        assert_eq!(mine(), before);
        assert!(super::live_heap().1 > 0);
    }
}
