//! A connection's writer: replies go out in request order, and those already complete when
//! one is written go with it, in one vectored write. A pipelining client whose requests
//! finish together (one group commit acknowledges several produces) gets one `sendmsg` for
//! all of them instead of one each, and no reply waits for a later one.
//!
//! A reply the client does not take within the write timeout closes the connection (the
//! reader then fails too), releasing its budget.

use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::future::poll_once;
use glommio::channels::local_channel::LocalReceiver;
use smallvec::SmallVec;

use super::stream::ConnWriter;
use super::Reply;
use crate::admission::budget::Reservation;
use crate::admission::slots::Presence;
use crate::io::deadline::within;
use crate::metrics::{self, Stage};
use crate::protocol::frame::Frame;

/// At most this many replies share one write (a client pipelines a few; the bound keeps a
/// write's iovecs and the wait for the first reply's bytes small).
const MAX_REPLIES_PER_WRITE: usize = 16;

/// A request being handled: its reply task, the budget its frame holds, and what the
/// metrics need (when its frame started arriving, its size).
pub(super) struct Queued {
    pub(super) task: glommio::Task<Reply>,
    pub(super) request_budget: Reservation,
    pub(super) started: Instant,
    /// How long the frame's body took to arrive (a stage, once the API is known).
    pub(super) frame_read: Duration,
    pub(super) bytes_in: usize,
    /// A client request (counted in flight until answered), not a handshake reply.
    pub(super) counted: bool,
}

impl Queued {
    /// A reply that needs no handler (a refusal, a re-authentication step).
    pub(super) fn ready(frame: Vec<u8>) -> Queued {
        Queued {
            task: crate::tasks::spawn(async move { Reply::frame(frame) }),
            request_budget: Reservation::default(),
            started: Instant::now(),
            frame_read: Duration::ZERO,
            bytes_in: 0,
            counted: false,
        }
    }
}

/// Counts a request as answered when dropped (its reply written, or the writer gone).
struct Answered<'a>(&'a Presence);

impl Drop for Answered<'_> {
    fn drop(&mut self) {
        self.0.request_done();
    }
}

/// A request answered: its reply and what its request held until the reply is written.
struct Answer<'a> {
    reply: Reply,
    request_budget: Reservation,
    started: Instant,
    bytes_in: usize,
    _answered: Option<Answered<'a>>,
}

impl<'a> Answer<'a> {
    /// `queued`'s request answered by `reply` (its task is done and dropped here);
    /// `answered` marks it answered when the answer is dropped.
    fn of(queued: Queued, reply: Reply, answered: Option<Answered<'a>>) -> Self {
        if reply.timed {
            metrics::record(Stage::FrameRead, queued.frame_read);
        }
        Answer {
            reply,
            request_budget: queued.request_budget,
            started: queued.started,
            bytes_in: queued.bytes_in,
            _answered: answered,
        }
    }

    /// Whether nothing may follow it on the connection.
    fn closes(&self) -> bool {
        self.reply.close
    }
}

type Batch<'a> = SmallVec<[Answer<'a>; 4]>;

/// Writes replies in request order until the queue ends or a write fails.
pub(super) async fn write_replies(
    mut writer: ConnWriter,
    rx: LocalReceiver<Queued>,
    limit: Duration,
    wire: &'static str,
    presence: Rc<Presence>,
) {
    let mut held: Option<Queued> = None;
    loop {
        let mut first = match held.take() {
            Some(queued) => queued,
            None => match rx.recv().await {
                Some(queued) => queued,
                None => return,
            },
        };
        // Marked before the wait, so a writer dropped while waiting still counts it answered.
        let answered = first.counted.then_some(Answered(&presence));
        let reply = (&mut first.task).await;
        let mut batch = Batch::new();
        batch.push(Answer::of(first, reply, answered));
        held = take_ready(&rx, &mut batch, &presence).await;
        assert!((1..=MAX_REPLIES_PER_WRITE).contains(&batch.len()));
        // Nothing follows a reply that closes the connection, in this write or after it.
        let closing = batch.iter().position(Answer::closes);
        assert!(closing.is_none_or(|at| at == batch.len() - 1 && held.is_none()));
        let write_start = Instant::now();
        let written = write_batch(&mut writer, &batch, limit).await;
        let write_took = write_start.elapsed();
        let close = batch.iter().any(Answer::closes);
        for answer in batch {
            done(answer, wire, written.is_ok().then_some(write_took));
        }
        if let Err(e) = &written {
            tracing::debug!(error = %e, "writing a reply failed; closing the connection");
        }
        if close || written.is_err() {
            // A request that could not be parsed, or a client that stopped reading: the
            // stream cannot be trusted any further.
            writer.shutdown().await;
            return;
        }
    }
}

/// Adds to `batch` the queued replies that are already complete, in order, up to the bound
/// or a reply that closes the connection. Returns the first queued one still running.
async fn take_ready<'a>(
    rx: &LocalReceiver<Queued>,
    batch: &mut Batch<'a>,
    presence: &'a Presence,
) -> Option<Queued> {
    while batch.len() < MAX_REPLIES_PER_WRITE && !batch.iter().any(Answer::closes) {
        // Polled once: an empty queue is not waited for (the pending receive is dropped).
        let Some(Some(mut queued)) = poll_once(rx.recv()).await else {
            return None;
        };
        match poll_once(&mut queued.task).await {
            Some(reply) => {
                let answered = queued.counted.then_some(Answered(presence));
                batch.push(Answer::of(queued, reply, answered));
            }
            None => return Some(queued),
        }
    }
    None
}

/// Writes the batch's frames in one vectored write, within the write timeout.
async fn write_batch(
    writer: &mut ConnWriter,
    batch: &Batch<'_>,
    limit: Duration,
) -> std::io::Result<()> {
    let frames: SmallVec<[&Frame; 4]> = batch
        .iter()
        .filter_map(|a| a.reply.frame.as_ref())
        .collect();
    assert!(frames.len() <= batch.len(), "a reply has at most one frame");
    for frame in &frames {
        // Every reply is a whole frame: its prefix counts the bytes after it, or the
        // client would lose its place in the stream.
        assert_eq!(frame.declared_size(), Some(frame.len() - 4));
    }
    if frames.is_empty() {
        return Ok(());
    }
    metrics::record_reply_write();
    within(limit, writer.write_frames(&frames)).await
}

/// Records a written reply and releases what its request held (the bytes are on their
/// way). `write_took`: how long the write it went out in took; `None` if it failed.
fn done(answer: Answer<'_>, wire: &'static str, write_took: Option<Duration>) {
    let Answer {
        reply,
        request_budget,
        started,
        bytes_in,
        _answered,
    } = answer;
    let Some(took) = write_took else {
        return;
    };
    let bytes_out = reply.frame.as_ref().map_or(0, |f| f.len());
    if reply.timed && bytes_out > 0 {
        metrics::record(Stage::SocketWrite, took);
    }
    metrics::record_request(metrics::RequestDone {
        wire,
        api: reply.api,
        ok: reply.ok,
        bytes_in,
        bytes_out,
        took: started.elapsed(),
    });
    drop((request_budget, reply.reservation));
}
