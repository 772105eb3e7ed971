//! A partition's visible log end and the long polls waiting for it to move (Kafka's Fetch
//! max_wait_ms / min_bytes): woken by the partition's task after a group of appends, never
//! by polling. Lives on the owner shard only.
//!
//! A wait registers its waker, not a channel, and takes it back when dropped: a long poll
//! that times out or is cancelled (its connection closed, another partition woke it, its
//! requester on another shard gave up) leaves nothing behind, however long the partition
//! stays idle.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
pub struct AppendWatch {
    end: Cell<i64>,
    waiters: RefCell<HashMap<u64, Waker>>,
}

thread_local! {
    /// Keys of waits on this thread (one per wait, used in every watch it is on).
    static NEXT_KEY: Cell<u64> = const { Cell::new(0) };
}

impl AppendWatch {
    pub fn new(end: i64) -> Rc<Self> {
        let w = AppendWatch::default();
        w.end.set(end);
        Rc::new(w)
    }

    pub fn end(&self) -> i64 {
        self.end.get()
    }

    /// The log end moved (or not): every wait is woken to check it again.
    pub fn advanced_to(&self, end: i64) {
        if end == self.end.replace(end) {
            return;
        }
        let woken: Vec<Waker> = self.waiters.borrow_mut().drain().map(|(_, w)| w).collect();
        assert!(self.waiters.borrow().is_empty(), "every waiter was woken");
        woken.into_iter().for_each(Waker::wake);
    }

    /// Waits registered now (a metric: it must return to zero when clients idle).
    pub fn waiters(&self) -> usize {
        self.waiters.borrow().len()
    }
}

/// Completes once any watched log end passes its `after`. Dropping it (timeout,
/// cancellation) removes it from every watch.
pub struct AnyAppend {
    key: u64,
    watches: Vec<(Rc<AppendWatch>, i64)>,
}

impl AnyAppend {
    /// Waits for any of `watches` (watch, after) to pass its `after`.
    pub fn new(watches: Vec<(Rc<AppendWatch>, i64)>) -> Self {
        let key = NEXT_KEY.with(|k| k.replace(k.get() + 1));
        AnyAppend { key, watches }
    }
}

impl Future for AnyAppend {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.watches.iter().any(|(w, after)| w.end() > *after) {
            this.deregister();
            return Poll::Ready(());
        }
        for (w, _) in &this.watches {
            let mut waiters = w.waiters.borrow_mut();
            match waiters.get_mut(&this.key) {
                Some(old) if old.will_wake(cx.waker()) => {}
                Some(old) => old.clone_from(cx.waker()),
                None => {
                    waiters.insert(this.key, cx.waker().clone());
                }
            }
        }
        Poll::Pending
    }
}

impl AnyAppend {
    fn deregister(&self) {
        for (w, _) in &self.watches {
            w.waiters.borrow_mut().remove(&self.key);
            assert!(
                !w.waiters.borrow().contains_key(&self.key),
                "a waiter leaves once"
            );
        }
    }
}

impl Drop for AnyAppend {
    fn drop(&mut self) {
        self.deregister();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future;

    #[test]
    fn a_wait_completes_once_an_end_passes_and_leaves_nothing_behind() {
        let (a, b) = (AppendWatch::new(10), AppendWatch::new(5));
        let mut wait = Box::pin(AnyAppend::new(vec![(a.clone(), 10), (b.clone(), 5)]));
        assert!(future::block_on(future::poll_once(&mut wait)).is_none());
        assert_eq!((a.waiters(), b.waiters()), (1, 1));
        // The same end again wakes nobody.
        a.advanced_to(10);
        assert_eq!(a.waiters(), 1);
        b.advanced_to(6);
        assert_eq!(b.waiters(), 0, "woken waits are taken off the watch");
        assert!(future::block_on(future::poll_once(&mut wait)).is_some());
        assert_eq!((a.waiters(), b.waiters()), (0, 0));
    }

    #[test]
    fn a_dropped_wait_deregisters_everywhere() {
        let (a, b) = (AppendWatch::new(0), AppendWatch::new(0));
        for _ in 0..1000 {
            let mut wait = Box::pin(AnyAppend::new(vec![(a.clone(), 0), (b.clone(), 0)]));
            assert!(future::block_on(future::poll_once(&mut wait)).is_none());
        }
        assert_eq!((a.waiters(), b.waiters()), (0, 0));
    }

    #[test]
    fn an_end_already_past_completes_at_once() {
        let a = AppendWatch::new(3);
        future::block_on(AnyAppend::new(vec![(a.clone(), 2)]));
        assert_eq!(a.waiters(), 0);
    }
}
