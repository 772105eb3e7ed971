//! Stopping the shards without polling: each shard awaits one end of a socket pair on its
//! own reactor (an io_uring read, no timer), and a stop (`ServerHandle::stop`, SIGINT or
//! SIGTERM) writes a byte to every other end. The signal handlers write through
//! signal-hook's pipe registration, which is async-signal-safe. The flag stays for
//! whoever asks whether a stop was requested.

use std::io::Write;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures_lite::AsyncReadExt;

/// The sending side, kept by the server handle (and cloned for a controlled shutdown's
/// signal thread).
#[derive(Clone)]
pub struct StopNotifier {
    flag: Arc<AtomicBool>,
    writers: Arc<[UnixStream]>,
}

/// One shard's receiving side (moved into its executor).
pub struct StopListener(UnixStream);

/// A notifier and one listener per shard.
pub fn stop_pair(shards: usize) -> std::io::Result<(StopNotifier, Vec<StopListener>)> {
    let mut writers = Vec::with_capacity(shards);
    let mut listeners = Vec::with_capacity(shards);
    for _ in 0..shards {
        let (w, r) = UnixStream::pair()?;
        w.set_nonblocking(true)?;
        writers.push(w);
        listeners.push(StopListener(r));
    }
    let flag = Arc::new(AtomicBool::new(false));
    let writers = writers.into();
    Ok((StopNotifier { flag, writers }, listeners))
}

impl StopNotifier {
    /// Asks every shard to stop (idempotent; never blocks).
    pub fn notify(&self) {
        self.flag.store(true, Ordering::SeqCst);
        for w in self.writers.iter() {
            let _ = (&*w).write(&[1]);
        }
    }

    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// SIGINT and SIGTERM stop the server: each writes a byte to every shard's socket.
    pub fn on_signals(&self) -> std::io::Result<()> {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, self.flag.clone())?;
            for w in self.writers.iter() {
                signal_hook::low_level::pipe::register(sig, w.try_clone()?)?;
            }
        }
        Ok(())
    }

    /// SIGINT and SIGTERM first run `before_stop` (a cluster node's controlled shutdown,
    /// which blocks until its leaderships moved or its bound passed), then stop the
    /// shards; a second signal meanwhile stops them at once.
    pub fn on_signals_after(
        &self,
        before_stop: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<()> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let notifier = self.clone();
        std::thread::Builder::new()
            .name("shardlog-signals".to_string())
            .spawn(move || {
                let mut before_stop = Some(before_stop);
                for _ in signals.forever() {
                    let Some(first) = before_stop.take() else {
                        tracing::warn!("a second stop signal: stopping now");
                        return notifier.notify();
                    };
                    let after = notifier.clone();
                    let handoff = std::thread::Builder::new()
                        .name("shardlog-handoff".to_string())
                        .spawn(move || {
                            first();
                            after.notify();
                        });
                    if handoff.is_err() {
                        return notifier.notify();
                    }
                }
            })?;
        Ok(())
    }
}

impl StopListener {
    /// Completes when a stop is requested (or the notifier is gone).
    pub async fn wait(self) {
        // SAFETY: the descriptor comes from a UnixStream we own and give up here; the
        // glommio stream takes sole ownership of it.
        let mut s = unsafe { glommio::net::UnixStream::from_raw_fd(self.0.into_raw_fd()) };
        let mut byte = [0u8; 1];
        let _ = s.read(&mut byte).await;
    }
}
