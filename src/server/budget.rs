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

    /// Waits until `bytes` are available in both budgets (connection first, so one greedy
    /// connection waits on itself before it takes from the shard). `None` if closed.
    pub async fn reserve(&self, bytes: usize) -> Option<Reservation> {
        let bytes = bytes as u64;
        let own = self.connection.acquire_static_permit(bytes).await.ok()?;
        let shared = self.shard.acquire_static_permit(bytes).await.ok()?;
        Some(Reservation {
            permits: vec![own, shared],
        })
    }
}
