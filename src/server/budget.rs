//! Memory a client controls, bounded: bytes of requests being read or run and of replies not
//! yet written count against the connection's budget and the shard's. When either is
//! exhausted the connection stops reading (TCP backpressure) and a Fetch waits before it
//! reads anything, so a client that pipelines large fetches and never reads the replies holds
//! at most its budget, and all clients of a shard at most the shard's.

use std::rc::Rc;

use glommio::sync::{Semaphore, StaticPermit};

/// The two budgets a connection draws from.
#[derive(Clone)]
pub struct Budget {
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
            connection: Rc::new(Semaphore::new(connection_bytes as u64)),
            shard,
        }
    }

    /// A new shard-wide budget.
    pub fn shard_pool(bytes: usize) -> Rc<Semaphore> {
        Rc::new(Semaphore::new(bytes as u64))
    }

    /// Budget for a request body of `bytes`. Small requests (up to [`SMALL`]) count against
    /// the connection only, so clients that hold the shard's budget (slow readers) cannot
    /// starve metadata, small produces and the other connections' requests.
    pub async fn reserve_request(&self, bytes: usize) -> Option<Reservation> {
        let own = self
            .connection
            .acquire_static_permit(bytes as u64)
            .await
            .ok()?;
        let mut permits = vec![own];
        if bytes > SMALL {
            permits.push(self.shard.acquire_static_permit(bytes as u64).await.ok()?);
        }
        Some(Reservation { permits })
    }

    /// Budget for a reply of up to `max` bytes; returns how many bytes were granted. The
    /// connection's share is waited for in full; from the shard's, a reply takes what is
    /// free (halving down to [`SMALL`], waiting only for that much), so under pressure
    /// fetches get smaller instead of stalling everyone.
    pub async fn reserve_reply(&self, max: usize) -> Option<(Reservation, usize)> {
        let own = self
            .connection
            .acquire_static_permit(max as u64)
            .await
            .ok()?;
        let mut want = max;
        let shared = loop {
            if let Ok(p) = self.shard.try_acquire_static_permit(want as u64) {
                break p;
            }
            if want <= SMALL {
                break self.shard.acquire_static_permit(want as u64).await.ok()?;
            }
            want = (want / 2).max(SMALL);
        };
        Some((
            Reservation {
                permits: vec![own, shared],
            },
            want,
        ))
    }
}

/// Requests and replies up to this size never wait for the shard's budget alone.
pub const SMALL: usize = 64 * 1024;
