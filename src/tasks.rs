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

/// `glommio::spawn_local`, counted. glommio runs the new task at once, up to its first
/// await, inside the caller: work that enqueues in order (a produce reaching its partition)
/// relies on that. A task that may touch state its caller holds borrowed must use
/// [`spawn_later`].
pub fn spawn<T: 'static>(fut: impl Future<Output = T> + 'static) -> glommio::Task<T> {
    glommio::spawn_local(counted(fut))
}

/// A counted task that starts at the executor's next turn, never inside its caller: safe to
/// spawn while a `RefCell` the task borrows is borrowed (a group being changed in place).
pub fn spawn_later<T: 'static>(fut: impl Future<Output = T> + 'static) -> glommio::Task<T> {
    let queue = glommio::executor().current_task_queue();
    // The current queue always exists while a task of it runs.
    spawn_into(fut, queue).expect("the running task's own queue exists")
}

/// `glommio::spawn_local_into`, counted (scheduled: it starts at the queue's next turn).
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
