//! A connection's requests take turns, as Kafka handles a connection's requests in order:
//! each request's handler starts once the one before it has queued its work (a produce
//! its batches at their partitions), and holds the next until it has queued its own.
//! Replies may still be prepared at once (pipelining); only the order in which work
//! reaches the engine is kept. A request cancelled or finished before it released its
//! turn releases it when dropped, so one request never stalls the rest.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// Passed from one request to the next.
#[derive(Default)]
struct Baton {
    passed: Cell<bool>,
    waiter: Cell<Option<Waker>>,
}

impl Baton {
    fn pass(&self) {
        self.passed.set(true);
        if let Some(w) = self.waiter.take() {
            w.wake();
        }
    }
}

/// One request's turn: waits for the previous request's baton, holds its own.
pub struct Turn {
    after: Option<Rc<Baton>>,
    mine: Rc<Baton>,
    /// The handler releases the turn itself (after asynchronous checks, once its work
    /// is queued), not [`in_turn`] after the first step.
    held: Cell<bool>,
}

/// Hands out a connection's turns in request order.
#[derive(Default)]
pub struct Turns {
    last: Option<Rc<Baton>>,
}

impl Turns {
    /// The next request's turn.
    pub fn next(&mut self) -> Turn {
        let mine = Rc::new(Baton::default());
        let after = self.last.replace(mine.clone());
        Turn {
            after,
            mine,
            held: Cell::new(false),
        }
    }
}

impl Turn {
    /// Resolves once every earlier request of the connection released its turn.
    pub async fn wait(&self) {
        let Some(after) = &self.after else { return };
        std::future::poll_fn(|cx| {
            if after.passed.get() {
                Poll::Ready(())
            } else {
                after.waiter.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await;
    }

    /// The handler will [`release`](Self::release) the turn itself.
    pub fn hold(&self) {
        self.held.set(true);
    }

    /// Lets the next request start (idempotent).
    pub fn release(&self) {
        self.mine.pass();
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.release();
    }
}

/// Runs `work` in its turn: it starts after the previous request released its turn, and
/// the turn is released once `work` first waits (everything it queued before its first
/// await is queued in request order), unless `work` held it (then it releases it itself).
pub async fn in_turn<T>(turn: &Turn, work: impl Future<Output = T>) -> T {
    turn.wait().await;
    let mut work = pin!(work);
    let first = futures_lite::future::poll_once(&mut work).await;
    if !turn.held.get() {
        turn.release();
    }
    match first {
        Some(done) => done,
        None => work.await,
    }
}

/// Queues `work` (its first step) and then releases `turn`: for a handler that held its
/// turn through asynchronous checks. What `work` does before its first await is what it
/// queues; the rest is awaited after the release.
pub async fn queue_then_release<T>(turn: &Turn, work: impl Future<Output = T>) -> T {
    let mut work = pin!(work);
    let first = futures_lite::future::poll_once(&mut work).await;
    turn.release();
    match first {
        Some(done) => done,
        None => work.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_release_in_order_and_on_drop() {
        let mut turns = Turns::default();
        let (a, b, c) = (turns.next(), turns.next(), turns.next());
        let waiting = |t: &Turn| {
            futures_lite::future::block_on(futures_lite::future::poll_once(pin!(t.wait())))
                .is_none()
        };
        assert!(!waiting(&a), "the first request never waits");
        assert!(waiting(&b) && waiting(&c));
        a.hold();
        assert!(waiting(&b), "a held turn is not released by itself");
        a.release();
        assert!(!waiting(&b));
        drop(b);
        assert!(!waiting(&c), "a dropped turn lets the next go");
    }
}
