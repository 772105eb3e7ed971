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

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations at least this large are reservations.
const RESERVE_FROM: usize = 1 << 30;
const PAGE: usize = 4096;

pub struct ReservingAllocator;

fn reserved(layout: &Layout) -> bool {
    layout.size() >= RESERVE_FROM && layout.align() <= PAGE
}

// SAFETY: every method forwards to `System` or to mmap/munmap/mremap with the layout's
// size, so the pointers returned are valid, aligned (page-aligned reservations only for
// alignments up to a page) and freed by the method that matches how they were made.
unsafe impl GlobalAlloc for ReservingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
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

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !reserved(&layout) {
            return System.dealloc(ptr, layout);
        }
        // SAFETY: `ptr` came from the mmap above with this size.
        libc::munmap(ptr.cast(), layout.size());
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !reserved(&layout) {
            return System.alloc_zeroed(layout);
        }
        // Anonymous mappings read as zeros.
        self.alloc(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        if !reserved(&layout) && !reserved(&new_layout) {
            return System.realloc(ptr, layout, new_size);
        }
        let fresh = self.alloc(new_layout);
        if !fresh.is_null() {
            std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        fresh
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
}
