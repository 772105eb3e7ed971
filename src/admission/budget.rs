//! Memory a client controls, bounded. Bytes of requests being read or run and of replies
//! not yet written are reserved before they exist and released once the reply is written.
//!
//! - Requests and replies up to [`SMALL`] bytes draw from the connection's small allowance
//!   ([`SMALL_ALLOWANCE`]) only, so metadata, lookups and small produces and fetches are
//!   never stuck behind other connections.
//! - Larger ones draw from the connection's budget in full and from the shard's budget: a
//!   fetch takes what the shard has free (halving down to `SMALL`), so under pressure
//!   replies get smaller instead of memory growing.
//! - Fairness: a reply never waits for bytes other connections hold. When the shard's
//!   budget cannot give even `SMALL` (peers that do not read their replies hold it), the
//!   reply is served at `SMALL` from the connection's own small allowance. What a
//!   connection holds counts against that connection first: its own next requests wait
//!   for its own replies to be taken, everyone else's do not.
//!
//! - Large requests also take a place among the connection's
//!   `max.inflight.large.requests.per.connection` (4), from their read until their reply
//!   is written (for one without a reply, as acks=0, until it was handled). A client that
//!   never waits for replies then queues its batches in its own socket, not in a
//!   partition's queue in front of other clients' requests: time in a queue grows with
//!   bytes, and the 64 MiB of the byte budget are 90 ms of appends.
//!
//! When a budget is exhausted the connection stops reading (TCP backpressure). Per shard,
//! request and reply bytes held are at most `max.inflight.bytes.per.shard` plus
//! `SMALL_ALLOWANCE` per connection, however clients pipeline and however slowly they read.

use std::rc::Rc;

use glommio::sync::{Semaphore, StaticPermit};
use smallvec::{smallvec, SmallVec};

/// Requests and replies up to this size use the small allowance.
pub const SMALL: usize = 64 * 1024;
/// Small request and reply bytes one connection may hold.
pub const SMALL_ALLOWANCE: usize = 1 << 20;

/// The budgets a connection draws from.
#[derive(Clone)]
pub struct Budget {
    small: Rc<Semaphore>,
    connection: Rc<Semaphore>,
    /// Large requests in progress: one permit each, from its frame's read until its reply
    /// is written.
    large_requests: Rc<Semaphore>,
    shard: Rc<Semaphore>,
}

/// Bytes held until dropped (after the reply is written).
#[derive(Default)]
pub struct Reservation {
    /// At most three (a large request's), held inline: reserving allocates nothing.
    permits: SmallVec<[StaticPermit; 3]>,
}

impl Reservation {
    pub fn merge(&mut self, other: Reservation) {
        self.permits.extend(other.permits);
    }
}

impl Budget {
    pub fn new(connection_bytes: usize, large_requests: usize, shard: Rc<Semaphore>) -> Self {
        assert!(
            large_requests >= 1,
            "a connection may have a large request in progress"
        );
        Budget {
            small: Rc::new(Semaphore::new(SMALL_ALLOWANCE as u64)),
            connection: Rc::new(Semaphore::new(connection_bytes as u64)),
            large_requests: Rc::new(Semaphore::new(large_requests as u64)),
            shard,
        }
    }

    /// A new shard-wide budget.
    pub fn shard_pool(bytes: usize) -> Rc<Semaphore> {
        Rc::new(Semaphore::new(bytes as u64))
    }

    async fn take(pool: &Rc<Semaphore>, bytes: usize) -> Option<StaticPermit> {
        pool.acquire_static_permit(bytes as u64).await.ok()
    }

    /// Budget for a request body of `bytes` (a large one first takes its place in
    /// progress). `None` if the budget was closed.
    pub async fn reserve_request(&self, bytes: usize) -> Option<Reservation> {
        let permits = if bytes <= SMALL {
            smallvec![Self::take(&self.small, bytes).await?]
        } else {
            smallvec![
                Self::take(&self.large_requests, 1).await?,
                Self::take(&self.connection, bytes).await?,
                Self::take(&self.shard, bytes).await?,
            ]
        };
        Some(Reservation { permits })
    }

    /// Budget for a reply of up to `max` bytes; returns it and how many bytes it grants.
    pub async fn reserve_reply(&self, max: usize) -> Option<(Reservation, usize)> {
        if max <= SMALL {
            let permits = smallvec![Self::take(&self.small, max).await?];
            return Some((Reservation { permits }, max));
        }
        // Waits only for this connection's own earlier replies.
        let own = Self::take(&self.connection, max).await?;
        let mut want = max;
        loop {
            if let Ok(shared) = self.shard.try_acquire_static_permit(want as u64) {
                assert!(want <= max, "a reply granted {want} of {max}");
                let permits = smallvec![own, shared];
                return Some((Reservation { permits }, want));
            }
            if want <= SMALL {
                break;
            }
            want = (want / 2).max(SMALL);
        }
        // The shard's budget is held by others: a small reply from this connection's own
        // allowance, never a wait on peers that may not read for minutes.
        drop(own);
        let permits = smallvec![Self::take(&self.small, SMALL).await?];
        Some((Reservation { permits }, SMALL))
    }
}

/// The one rule for how many record bytes a fetch may return, built once by the front end
/// from what the request asked: at most what it asked, and no more than fits in one frame
/// with the reply's other fields (`overhead`); then, each time it reads, at most what the
/// connection's and the shard's budgets grant (under memory pressure the reply gets
/// smaller, always at least one byte, so at least one batch).
#[derive(Debug, Clone, Copy)]
pub struct FetchPlan {
    /// Record bytes the reply may hold at most.
    records: usize,
    /// Bytes of the reply besides records.
    overhead: usize,
    /// What is reserved: the whole reply, never more than a frame.
    reserve: usize,
}

impl FetchPlan {
    pub fn new(asked: usize, overhead: usize, max_frame: usize) -> Self {
        // A request naming more partitions than a frame can describe still gets one byte
        // (its reply is then refused by the frame limit, not by a panic here).
        let records = asked.max(1).min(max_frame.saturating_sub(overhead).max(1));
        let reserve = (records + overhead).min(max_frame);
        assert!(records >= 1, "a fetch may always return at least one batch");
        assert!(
            reserve <= max_frame.max(1),
            "a reply is reserved within one frame"
        );
        FetchPlan {
            records,
            overhead,
            reserve,
        }
    }

    /// Reserves the reply's bytes (before anything is read) and returns the reservation and
    /// the record bytes it grants; `None` once the connection is closing.
    pub async fn grant(&self, budget: &Budget) -> Option<(Reservation, usize)> {
        let (reply, granted) = budget.reserve_reply(self.reserve).await?;
        assert!(
            granted <= self.reserve,
            "granted {granted} of {}",
            self.reserve
        );
        let records = granted.saturating_sub(self.overhead).clamp(1, self.records);
        assert!(
            (1..=self.records).contains(&records),
            "a grant is at least one byte and at most the plan"
        );
        Some((reply, records))
    }
}

#[cfg(test)]
mod tests {
    use super::FetchPlan;

    #[test]
    fn a_fetch_plan_asks_for_what_fits_in_a_frame_and_at_least_one_byte() {
        let big = FetchPlan::new(10 << 20, 64, 1 << 20);
        assert_eq!((big.records, big.reserve), ((1 << 20) - 64, 1 << 20));
        let small = FetchPlan::new(500, 64, 1 << 20);
        assert_eq!((small.records, small.reserve), (500, 564));
        let nothing = FetchPlan::new(0, 64, 1 << 20);
        assert_eq!(nothing.records, 1);
        // More partitions than a frame can describe: one byte, a frame's reservation.
        let crowded = FetchPlan::new(500, 2 << 20, 1 << 20);
        assert_eq!((crowded.records, crowded.reserve), (1, 1 << 20));
    }
}
