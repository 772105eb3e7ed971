//! The accept loop of a listener: a connection slot per client (per listener and per peer
//! address), a backoff on accept failures (EMFILE), and logs that a flood cannot flood.

use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::net::TcpListener;

use super::{connection, FrontEnd};
use crate::admission::slots::{Refusal, Slots};
use crate::shard::Shard;

/// The next connection, or `None` once the shard begins shutting down.
pub(crate) async fn accept_or_stop(
    listener: &TcpListener,
    stop: &glommio::channels::local_channel::LocalReceiver<()>,
) -> Option<glommio::Result<glommio::net::TcpStream, ()>> {
    futures_lite::future::or(async { Some(listener.accept().await) }, async {
        stop.recv().await;
        None
    })
    .await
}

/// A listener's protocol and the connection slots it draws from.
pub struct Listener {
    pub socket: TcpListener,
    pub front: Rc<dyn FrontEnd>,
    pub slots: Rc<Slots>,
}

/// Accepts connections until the shard stops, each within the listener's slots.
pub async fn accept_loop(shard: Rc<Shard>, listener: Listener) {
    let Listener {
        socket: listener,
        front,
        slots,
    } = listener;
    let stop = shard.shutdown_listener();
    let mut backoff = AcceptBackoff::default();
    let mut refused = RefusalLog::default();
    loop {
        match accept_or_stop(&listener, &stop).await {
            None => break,
            Some(Ok(stream)) => {
                let peer = stream.peer_addr().ok().map(|a| a.ip());
                let slot = match slots.take(peer) {
                    Ok(slot) => slot,
                    Err(refusal) => {
                        refused.note(shard.id(), front.label(), peer, refusal);
                        let why = refusal.describe(front.label());
                        crate::tasks::spawn(connection::refuse_connection(
                            stream,
                            front.clone(),
                            why,
                        ))
                        .detach();
                        continue;
                    }
                };
                let writer = match connection::writer_half(&stream) {
                    Ok(writer) => writer,
                    Err(e) => {
                        drop(stream);
                        glommio::timer::sleep(backoff.failed(shard.id(), &e)).await;
                        continue;
                    }
                };
                backoff.reset();
                shard.count_connection(true);
                let (shard, front) = (shard.clone(), front.clone());
                let presence = slot.presence();
                crate::tasks::spawn(async move {
                    connection::serve(shard.clone(), stream, writer, front, presence).await;
                    shard.count_connection(false);
                    drop(slot);
                })
                .detach();
            }
            Some(Err(e)) => {
                let pause = backoff.failed(shard.id(), &e.into());
                glommio::timer::sleep(pause).await;
            }
        }
    }
}

/// Refused connections are logged at most once a second, with a count: a peer flooding a
/// listener must not flood the log too.
#[derive(Default)]
struct RefusalLog {
    unlogged: u64,
    last_log: Option<Instant>,
}

impl RefusalLog {
    fn note(
        &mut self,
        shard: usize,
        wire: &'static str,
        peer: Option<std::net::IpAddr>,
        why: Refusal,
    ) {
        self.unlogged += 1;
        if self
            .last_log
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!(
                shard,
                wire,
                ?peer,
                ?why,
                refused = self.unlogged,
                "connection limit reached; refusing connections"
            );
            self.unlogged = 0;
            self.last_log = Some(Instant::now());
        }
    }
}

/// Accept failures (EMFILE above all) back off exponentially, 10 ms to 1 s, and are logged
/// at most once a second with a count, instead of spinning and flooding the log.
#[derive(Default)]
struct AcceptBackoff {
    failures: u32,
    unlogged: u64,
    last_log: Option<Instant>,
}

impl AcceptBackoff {
    fn reset(&mut self) {
        self.failures = 0;
    }

    fn failed(&mut self, shard: usize, e: &std::io::Error) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.unlogged += 1;
        if self
            .last_log
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!(shard, error = %e, failures = self.unlogged, "accept failed; backing off");
            self.unlogged = 0;
            self.last_log = Some(Instant::now());
        }
        let pause = Duration::from_millis((10u64 << self.failures.min(7)).min(1000));
        assert!(
            pause <= Duration::from_secs(1),
            "accept backs off at most a second"
        );
        pause
    }
}
