//! Waiting for a short I/O a client waits on without letting the shard's CPU sleep.
//!
//! A shard with nothing to run parks in `io_uring_enter`; on this kind of VM the idle vCPU
//! halts, and waking it when the I/O completes costs tens of microseconds, a large part of
//! a cold lookup. glommio's `spin_before_park` avoids that for everything, at a CPU cost on
//! write streams when it is long. This keeps the shard awake only while such an I/O is in
//! flight (a read a fetch or lookup waits for, an index page, a small acks=1 flush; not
//! read-ahead, uploads or cleaning): the waiting task re-checks it behind a `RECHECK`
//! timer, so the executor's loop keeps polling the rings until it lands, for at most
//! `AWAKE_BUDGET`. Between re-checks the executor has nothing to run: with the default
//! `spin.before.park.us` (longer than `RECHECK`) it polls until the timer expires; with 0
//! it parks for that microsecond, paying an expedited membarrier and a sleeping
//! `io_uring_enter` each time, which costs a cold lookup about a sixth of its time.

use std::future::Future;
use std::time::{Duration, Instant};

/// Longest an I/O is waited for awake; a slower one is waited for parked.
pub const AWAKE_BUDGET: Duration = Duration::from_micros(500);

/// How often an awake wait re-checks its I/O: the timer of `next_turn`.
pub const RECHECK: Duration = Duration::from_micros(1);

/// Parks the caller until the next turn of the executor loop, which submits the storage
/// I/O queued so far and reaps completions. Yielding the task queue does neither: glommio
/// re-runs a yielded queue before it polls its rings.
pub async fn next_turn() {
    glommio::timer::sleep(RECHECK).await;
}

/// Awaits `fut`, keeping the shard awake for up to `AWAKE_BUDGET` while it is pending.
pub async fn awake_until<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let start = Instant::now();
    loop {
        if let Some(out) = futures_lite::future::poll_once(fut.as_mut()).await {
            return out;
        }
        if start.elapsed() >= AWAKE_BUDGET {
            return fut.await;
        }
        next_turn().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ready future, one that lands within the budget and one that outlasts it all give
    /// their output (the last after the budget, parked).
    #[test]
    fn gives_the_output_whenever_it_lands() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                assert_eq!(awake_until(async { 7 }).await, 7);
                for wait in [Duration::from_micros(50), AWAKE_BUDGET * 4] {
                    let start = Instant::now();
                    let landed = awake_until(async {
                        glommio::timer::sleep(wait).await;
                        wait
                    })
                    .await;
                    assert_eq!(landed, wait);
                    assert!(start.elapsed() >= wait);
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
