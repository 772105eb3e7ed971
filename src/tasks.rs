//! Every task shardlog spawns goes through here, so each executor thread knows how many of
//! its tasks are alive (the `tasks` metric): a task a cancelled request left behind shows on
//! a graph long before it shows as memory.

use std::cell::Cell;
use std::future::Future;

thread_local! {
    static LIVE: Cell<u64> = const { Cell::new(0) };
}

/// Held by a task's future: counted from spawn until the future is dropped (completed or
/// cancelled).
struct Alive;

impl Alive {
    fn new() -> Self {
        LIVE.with(|c| c.set(c.get() + 1));
        Alive
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        LIVE.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

fn counted<T>(fut: impl Future<Output = T>) -> impl Future<Output = T> {
    let alive = Alive::new();
    async move {
        let _alive = alive;
        fut.await
    }
}

/// `glommio::spawn_local`, counted.
pub fn spawn<T: 'static>(fut: impl Future<Output = T> + 'static) -> glommio::Task<T> {
    glommio::spawn_local(counted(fut))
}

/// `glommio::spawn_local_into`, counted.
pub fn spawn_into<T: 'static>(
    fut: impl Future<Output = T> + 'static,
    queue: glommio::TaskQueueHandle,
) -> glommio::Result<glommio::Task<T>, ()> {
    glommio::spawn_local_into(counted(fut), queue)
}

/// Tasks of this thread alive now.
pub fn live() -> u64 {
    LIVE.with(Cell::get)
}
