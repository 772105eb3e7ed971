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
//! When a budget is exhausted the connection stops reading (TCP backpressure). Per shard,
//! request and reply bytes held are at most `max.inflight.bytes.per.shard` plus
//! `SMALL_ALLOWANCE` per connection, however clients pipeline and however slowly they read.

use std::rc::Rc;

use glommio::sync::{Semaphore, StaticPermit};

/// Requests and replies up to this size use the small allowance.
pub const SMALL: usize = 64 * 1024;
/// Small request and reply bytes one connection may hold.
pub const SMALL_ALLOWANCE: usize = 1 << 20;

/// The budgets a connection draws from.
#[derive(Clone)]
pub struct Budget {
    small: Rc<Semaphore>,
    connection: Rc<Semaphore>,
    shard: Rc<Semaphore>,
}

/// Bytes held until dropped (after the reply is written).
#[derive(Default)]
pub struct Reservation {
    permits: Vec<StaticPermit>,
}

impl Reservation {
    pub fn merge(&mut self, other: Reservation) {
        self.permits.extend(other.permits);
    }
}

impl Budget {
    pub fn new(connection_bytes: usize, shard: Rc<Semaphore>) -> Self {
        Budget {
            small: Rc::new(Semaphore::new(SMALL_ALLOWANCE as u64)),
            connection: Rc::new(Semaphore::new(connection_bytes as u64)),
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

    /// Budget for a request body of `bytes`. `None` if the budget was closed.
    pub async fn reserve_request(&self, bytes: usize) -> Option<Reservation> {
        let permits = if bytes <= SMALL {
            vec![Self::take(&self.small, bytes).await?]
        } else {
            vec![
                Self::take(&self.connection, bytes).await?,
                Self::take(&self.shard, bytes).await?,
            ]
        };
        Some(Reservation { permits })
    }

    /// Budget for a reply of up to `max` bytes; returns it and how many bytes it grants.
    pub async fn reserve_reply(&self, max: usize) -> Option<(Reservation, usize)> {
        if max <= SMALL {
            let permits = vec![Self::take(&self.small, max).await?];
            return Some((Reservation { permits }, max));
        }
        // Waits only for this connection's own earlier replies.
        let own = Self::take(&self.connection, max).await?;
        let mut want = max;
        loop {
            if let Ok(shared) = self.shard.try_acquire_static_permit(want as u64) {
                let permits = vec![own, shared];
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
        let permits = vec![Self::take(&self.small, SMALL).await?];
        Some((Reservation { permits }, SMALL))
    }
}
