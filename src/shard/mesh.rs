//! The channel mesh between shards: a request sent to the owner and its reply, broadcasts,
//! and the receive side that runs a peer's request in its own task. Requests to a peer go
//! out in order through its outbox; a dropped requester forgets its request and cancels a
//! cancellable one on the peer.

use std::rc::Rc;

use glommio::channels::local_channel;

use super::outbox::{self, Sent, Unreachable};
use crate::partition_ops::{OpOk, OpResult};
use crate::protocol::ErrorCode;
use crate::shard::messages::{MeshMsg, ShardOp};
use crate::shard::runtime::{err, Shard};

/// A request sent to a peer and not yet answered: dropped early (its requester gave up),
/// it forgets the request and, for a cancellable op, tells the peer to drop it.
struct Outstanding {
    shard: Rc<Shard>,
    peer: usize,
    id: u64,
    cancel: bool,
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        if self.shard.pending.borrow_mut().remove(&self.id).is_some() && self.cancel {
            self.shard.cancel_remote(self.peer, self.id);
        }
    }
}

impl Shard {
    /// Runs `op` on this shard and on every other shard at once; the first error wins.
    pub async fn on_every_shard(self: &Rc<Self>, op: ShardOp) -> OpResult {
        let (local, remote) =
            futures_lite::future::zip(self.execute(op.clone()), self.broadcast(op)).await;
        local.and(remote)
    }

    /// Runs `op` on shard `owner`: here, or over the mesh.
    pub async fn run_on(self: &Rc<Self>, owner: usize, op: ShardOp) -> OpResult {
        if owner == self.id {
            self.execute(op).await
        } else {
            self.remote(owner, op).await
        }
    }

    /// Sends an operation to another shard and waits for its answer. Dropped before the
    /// answer, it forgets the request, and cancels a cancellable op on the peer.
    pub async fn remote(self: &Rc<Self>, peer: usize, op: ShardOp) -> OpResult {
        assert!(peer < self.n, "shard {peer} of {}", self.n);
        assert_ne!(
            peer, self.id,
            "a shard's own work runs locally, not over the mesh"
        );
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = local_channel::new_bounded(1);
        let earlier = self.pending.borrow_mut().insert(id, tx);
        assert!(earlier.is_none(), "request id {id} reused while awaited");
        let timed = match &op {
            ShardOp::Partition { op, .. } => op.is_data_path(),
            ShardOp::Partitions(ops) => ops.iter().any(|(_, op)| op.is_data_path()),
            ShardOp::FetchInOrder { .. } => true,
            _ => false,
        };
        let mut outstanding = Outstanding {
            shard: self.clone(),
            peer,
            id,
            cancel: false,
        };
        let cancellable = op.cancellable();
        let msg = MeshMsg::Request {
            id,
            from: self.id,
            op,
        };
        let t0 = std::time::Instant::now();
        if let Err(e) = self.send_mesh(peer, msg) {
            return err(ErrorCode::Internal, e.to_string());
        }
        outstanding.cancel = cancellable;
        let answer = rx
            .recv()
            .await
            .unwrap_or_else(|| err(ErrorCode::Internal, "reply channel closed"));
        outstanding.cancel = false;
        if timed {
            crate::metrics::record_since(crate::metrics::Stage::MeshRoundTrip, t0);
        }
        answer
    }

    /// Sends to every other shard and waits for all answers; returns the first error.
    pub async fn broadcast(self: &Rc<Self>, op: ShardOp) -> OpResult {
        let mut tasks = Vec::new();
        for peer in (0..self.n).filter(|&p| p != self.id) {
            let me = self.clone();
            let op = op.clone();
            tasks.push(crate::tasks::spawn(
                async move { me.remote(peer, op).await },
            ));
        }
        let mut first_err = None;
        for t in tasks {
            if let Err(e) = t.await {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(OpOk::Done), Err)
    }

    /// Handles one message from the mesh. Requests run in their own task and the reply is
    /// sent from there, never from the receive loop (two full queues would deadlock).
    pub fn on_mesh_message(self: &Rc<Self>, msg: MeshMsg) {
        match msg {
            MeshMsg::Request { id, from, op } if op.cancellable() => {
                let (cancel, cancelled) = local_channel::new_bounded::<()>(1);
                // Ids are unique per sender: one live request per (from, id).
                let earlier = self.cancellable.borrow_mut().insert((from, id), cancel);
                assert!(earlier.is_none(), "request {id} from shard {from} twice");
                let me = self.clone();
                crate::tasks::spawn(async move {
                    let result =
                        futures_lite::future::or(async { Some(me.execute(op).await) }, async {
                            cancelled.recv().await;
                            None
                        })
                        .await;
                    me.cancellable.borrow_mut().remove(&(from, id));
                    if let Some(result) = result {
                        me.reply(from, id, result);
                    }
                })
                .detach();
            }
            MeshMsg::Request { id, from, op } => {
                // A shard's own work never crosses the mesh.
                assert!(
                    from != self.id && from < self.n,
                    "a request from shard {from}"
                );
                let me = self.clone();
                crate::tasks::spawn(async move {
                    let result = me.execute(op).await;
                    me.reply(from, id, result);
                })
                .detach();
            }
            MeshMsg::Response { id, result } => {
                if let Some(tx) = self.pending.borrow_mut().remove(&id) {
                    let _ = tx.try_send(result);
                }
            }
            MeshMsg::Cancel { id, from } => {
                // Dropping the sender ends the op's wait; its task then ends without a reply.
                self.cancellable.borrow_mut().remove(&(from, id));
            }
        }
    }

    pub(super) fn reply(self: &Rc<Self>, to: usize, id: u64, result: OpResult) {
        let msg = MeshMsg::Response { id, result };
        if self.send_mesh(to, msg).is_err() {
            tracing::warn!(peer = to, "could not reply over the mesh");
        }
    }

    /// Sends to `peer` without waiting, in order with everything sent to it before
    /// (`outbox.rs`).
    pub(super) fn send_mesh(self: &Rc<Self>, peer: usize, msg: MeshMsg) -> Result<(), Unreachable> {
        if let Sent::QueuedStartDrain = self.outbox.send(peer, msg)? {
            let me = self.clone();
            let undelivered = move |m| me.undelivered(m);
            crate::tasks::spawn_later(outbox::drain(self.outbox.clone(), peer, undelivered))
                .detach();
        }
        Ok(())
    }

    /// A request the closed mesh refused is answered as failed (its waiter sees the reply
    /// channel close).
    pub(super) fn undelivered(&self, msg: MeshMsg) {
        if let MeshMsg::Request { id, .. } = msg {
            self.pending.borrow_mut().remove(&id);
        }
    }

    /// Tells `peer` that the cancellable request `id` is no longer awaited (from a drop:
    /// the outbox never waits, and the cancel follows the request it cancels).
    pub(super) fn cancel_remote(self: &Rc<Self>, peer: usize, id: u64) {
        let _ = self.send_mesh(peer, MeshMsg::Cancel { id, from: self.id });
    }
}
