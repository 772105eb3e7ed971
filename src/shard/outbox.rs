//! Messages to another shard leave in the order they were sent. A produce forwarded to its
//! owner shard must reach the partition behind every earlier produce of its connection
//! (Kafka handles a connection's requests in order); glommio's mesh channel is FIFO, but
//! tasks waiting on a full channel are not woken in the order they started waiting. So a
//! message goes straight into the channel only when nothing waits for that peer; otherwise
//! it queues here, and one task per peer drains the queue in order.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use glommio::channels::channel_mesh::Senders;
use glommio::GlommioError;

use super::messages::MeshMsg;

/// The channel to `peer` is closed (the server is stopping).
#[derive(Debug, thiserror::Error)]
#[error("shard {peer} is unreachable")]
pub struct Unreachable {
    pub peer: usize,
}

pub struct Outbox {
    senders: Senders<MeshMsg>,
    /// Per peer: messages waiting for room in its channel, oldest first.
    queued: RefCell<Vec<VecDeque<MeshMsg>>>,
    /// Per peer: whether a task is draining its queue (then new messages queue too, even
    /// when the channel has room, or they would overtake the one being sent).
    draining: Vec<Cell<bool>>,
}

/// What [`Outbox::send`] did with a message.
#[must_use]
#[non_exhaustive]
pub enum Sent {
    /// In the peer's channel.
    Delivered,
    /// Queued behind others; the caller starts [`drain`] for the peer.
    QueuedStartDrain,
    /// Queued behind others; a drain already runs.
    Queued,
}

impl Outbox {
    pub fn new(senders: Senders<MeshMsg>, peers: usize) -> Rc<Self> {
        Rc::new(Outbox {
            senders,
            queued: RefCell::new((0..peers).map(|_| VecDeque::new()).collect()),
            draining: (0..peers).map(|_| Cell::new(false)).collect(),
        })
    }

    /// Sends `msg` to `peer` without waiting, in order with every earlier message to it.
    pub fn send(&self, peer: usize, msg: MeshMsg) -> Result<Sent, Unreachable> {
        let draining = &self.draining[peer];
        let msg = if draining.get() {
            msg
        } else {
            match self.senders.try_send_to(peer, msg) {
                Ok(()) => return Ok(Sent::Delivered),
                Err(GlommioError::WouldBlock(glommio::ResourceType::Channel(msg))) => msg,
                Err(_) => return Err(Unreachable { peer }),
            }
        };
        self.queued.borrow_mut()[peer].push_back(msg);
        if draining.replace(true) {
            Ok(Sent::Queued)
        } else {
            Ok(Sent::QueuedStartDrain)
        }
    }
}

/// Sends `peer`'s queued messages in order, waiting for room; ends when the queue is
/// empty. A message the closed channel refuses goes to `undelivered`.
pub async fn drain(outbox: Rc<Outbox>, peer: usize, undelivered: impl Fn(MeshMsg)) {
    assert!(
        outbox.draining[peer].get(),
        "one drain per peer, started by send"
    );
    loop {
        let next = outbox.queued.borrow_mut()[peer].pop_front();
        let Some(msg) = next else { break };
        if let Err(e) = outbox.senders.send_to(peer, msg).await {
            match e {
                GlommioError::Closed(glommio::ResourceType::Channel(m)) => undelivered(m),
                other => tracing::warn!(peer, %other, "a mesh message was lost"),
            }
        }
    }
    outbox.draining[peer].set(false);
}
