//! A simulated shardlog node: what survives a crash (its log, its checkpointed high
//! watermark) and what does not (its replica state, its lease, its view of the store).
//! Every decision is the library's (`shardlog::replication`); this file only carries
//! them out and turns them into messages.

use shardlog::replication::controller::{alter_isr, elect, IsrRefused, Liveness};
use shardlog::replication::reassignment::{complete, start};
use shardlog::replication::replica::Received;
use shardlog::replication::{
    EpochCache, EpochEntry, FetchAnswer, FetchRequest, IsrChange, NodeId, Offset, PartitionState,
    Replica, Role,
};

use super::store::{Lease, Reply, Request, Snapshot};
use super::{Answer, Entry, Event, Msg, FETCH_MAX, MAX_LAG_MS, MIN_INSYNC};

pub struct Node {
    pub id: NodeId,
    /// Durable: the log (each record with the epoch it was written in) and the high
    /// watermark as last checkpointed.
    pub log: Vec<Entry>,
    pub hw_checkpoint: Offset,
    /// Which run of the process this is (replies to an earlier one are never delivered).
    pub incarnation: u32,
    pub up: bool,
    pub paused_until: i64,
    /// This node's clock minus the world's (clock jumps).
    pub clock_offset: i64,
    pub replica: Replica,
    lease: Option<Lease>,
    pub broker_epoch: Option<i64>,
    pub view: Option<Snapshot>,
    /// Appends waiting for the high watermark: (offset, record id, epoch).
    waiting: Vec<(Offset, u64, i32)>,
    /// A controlled shutdown asked at this (world) time: the node marks itself leaving
    /// and stops once the controller moved what it led, or after its bound.
    pub leaving_since: Option<i64>,
}

/// The brokers as one snapshot shows them: live with their epochs, some leaving.
struct Brokers<'a>(&'a Snapshot);

impl Liveness for Brokers<'_> {
    fn epoch(&self, node: NodeId) -> Option<i64> {
        self.0.brokers.get(&node).copied()
    }

    fn leaving(&self, node: NodeId) -> bool {
        self.0.leaving.contains(&node)
    }
}

/// The epoch history a log implies (what Kafka rebuilds when the checkpoint is missing).
pub fn epochs_of(log: &[Entry]) -> EpochCache {
    let mut cache = EpochCache::default();
    for run in runs(log, 0) {
        cache.assign(run.epoch, run.start_offset);
    }
    cache
}

/// The first offset of each epoch among `entries` (which start at `from`).
fn runs(entries: &[Entry], from: Offset) -> Vec<EpochEntry> {
    let mut out: Vec<EpochEntry> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if out.last().is_none_or(|r| r.epoch != e.epoch) {
            out.push(EpochEntry {
                epoch: e.epoch,
                start_offset: from + i as Offset,
            });
        }
    }
    out
}

impl Node {
    pub fn new(id: NodeId) -> Node {
        Node {
            id,
            log: Vec::new(),
            hw_checkpoint: 0,
            incarnation: 0,
            up: true,
            paused_until: 0,
            clock_offset: 0,
            replica: Replica::new(id, EpochCache::default(), 0),
            lease: None,
            broker_epoch: None,
            view: None,
            waiting: Vec::new(),
            leaving_since: None,
        }
    }

    /// A crash: everything not on disk is gone.
    pub fn crash(&mut self) {
        self.up = false;
        self.incarnation += 1;
        self.lease = None;
        self.broker_epoch = None;
        self.view = None;
        self.waiting.clear();
    }

    /// The process starts again from its files.
    pub fn restart(&mut self) {
        self.up = true;
        self.leaving_since = None;
        let hw = self.hw_checkpoint.min(self.leo());
        self.replica = Replica::new(self.id, epochs_of(&self.log), hw);
    }

    pub fn leo(&self) -> Offset {
        self.log.len() as Offset
    }

    fn store(&self, req: Request) -> Msg {
        Msg::ToStore {
            from: self.id,
            incarnation: self.incarnation,
            req,
        }
    }

    /// Every heartbeat: renew or register, read the store, keep the ISR current, fetch.
    pub fn tick(&mut self, now: i64, out: &mut Vec<Msg>) {
        match (self.lease, self.broker_epoch) {
            (None, _) => out.push(self.store(Request::Grant)),
            (Some(lease), None) => out.push(self.store(Request::Register { id: self.id, lease })),
            (Some(lease), Some(_)) => out.push(self.store(Request::KeepAlive(lease))),
        }
        if let (Some(_), Some(lease)) = (self.leaving_since, self.lease) {
            out.push(self.store(Request::Leave { id: self.id, lease }));
        }
        out.push(self.store(Request::Read));
        if let Some(change) = self.replica.check_isr(now, MAX_LAG_MS) {
            self.send_isr_change(change, out);
        } else if let Some(change) = self.replica.pending_isr_change() {
            self.send_isr_change(change, out);
        }
        if let Some((leader, req)) = self.replica.fetch_request(self.leo()) {
            out.push(Msg::Fetch {
                to: leader,
                incarnation: self.incarnation,
                req,
            });
        }
        self.hw_checkpoint = self.replica.high_watermark();
    }

    /// An ISR change goes to the store as a swap on the state this node read, if the
    /// controller's rules allow it on that state.
    /// A change the rules refuse for good (it adds a replica that is leaving) is dropped,
    /// as the server's leader drops what etcd refuses.
    fn send_isr_change(&mut self, change: IsrChange, out: &mut Vec<Msg>) {
        let Some(view) = &self.view else { return };
        match alter_isr(&view.partition, &change, &Brokers(view)) {
            Ok(state) => {
                let expect = view.partition_revision;
                out.push(self.store(Request::Swap {
                    expect,
                    controller_epoch: None,
                    state,
                }));
            }
            Err(IsrRefused::Ineligible) => self.replica.abandon_isr_change(&change, self.leo()),
            Err(_) => {}
        }
    }

    /// A leaving node may stop: the controller has nothing left to move for it (it leads
    /// nothing and is out of the ISR, unless it is the last member there).
    pub fn handed_off(&self) -> bool {
        let Some(view) = &self.view else {
            return false;
        };
        let p = &view.partition;
        let involved = p.leader == Some(self.id) || p.isr.contains(&self.id);
        view.leaving.contains(&self.id) && (!involved || elect(p, &Brokers(view)).is_none())
    }

    /// A graceful stop: the lease goes with a last request, then the process ends.
    pub fn stop(&mut self, out: &mut Vec<Msg>) {
        if let Some(lease) = self.lease {
            out.push(self.store(Request::Revoke(lease)));
        }
        self.crash();
    }

    pub fn on_store_reply(
        &mut self,
        reply: Reply,
        now: i64,
        out: &mut Vec<Msg>,
        events: &mut Vec<Event>,
    ) {
        match reply {
            Reply::Granted(lease) if self.lease.is_none() => {
                self.lease = Some(lease);
                out.push(self.store(Request::Register { id: self.id, lease }));
            }
            // Replies to requests of an earlier lease are stale.
            Reply::Registered { lease, .. } | Reply::KeptAlive { lease, .. }
                if Some(lease) != self.lease => {}
            Reply::Registered { epoch, .. } if epoch > 0 => self.broker_epoch = Some(epoch),
            Reply::Registered { .. } | Reply::KeptAlive { alive: false, .. } => {
                self.lease = None;
                self.broker_epoch = None;
            }
            Reply::Snapshot(snapshot) => self.on_snapshot(snapshot, now, out, events),
            _ => {}
        }
    }

    fn on_snapshot(
        &mut self,
        snapshot: Snapshot,
        now: i64,
        out: &mut Vec<Msg>,
        events: &mut Vec<Event>,
    ) {
        // A node's views only move forward (the server's come through one watch channel).
        if (self.view.as_ref()).is_some_and(|v| v.partition_revision > snapshot.partition_revision)
        {
            return;
        }
        if let Some(broker_epoch) = self.broker_epoch {
            match snapshot.partition.replicas.contains(&self.id) {
                true => self
                    .replica
                    .apply(&snapshot.partition, broker_epoch, self.leo(), now),
                false => self.stop_replica(&snapshot.partition, events),
            }
            self.settle(out, events);
        }
        match (snapshot.controller, self.lease) {
            (None, Some(lease)) => out.push(self.store(Request::Campaign { id: self.id, lease })),
            (Some((c, epoch)), Some(_)) if c == self.id => self.control(&snapshot, epoch, out),
            _ => {}
        }
        self.view = Some(snapshot);
    }

    /// No longer a replica (a reassignment moved the partition away): as the server's
    /// task, it stops and its copy is emptied, unless the state is a late one.
    fn stop_replica(&mut self, state: &PartitionState, events: &mut Vec<Event>) {
        let hw = self.replica.high_watermark() as usize;
        if self.replica.stop(state) {
            // What it held below its high watermark is committed: checked before it goes.
            let committed = self.log[..hw.min(self.log.len())].to_vec();
            events.push(Event::Removed {
                node: self.id,
                committed,
            });
            self.log.clear();
            self.hw_checkpoint = 0;
            self.waiting.clear();
        }
    }

    /// As controller, asked by an operator: a reassignment of the partition to `target`
    /// (KRaft's rules), written fenced by the controller's epoch.
    pub fn reassign(&self, target: &[NodeId], out: &mut Vec<Msg>) {
        let Some(view) = &self.view else { return };
        let Some((c, epoch)) = view.controller.filter(|(c, _)| *c == self.id) else {
            return;
        };
        assert_eq!(c, self.id);
        if let Ok(Some(state)) = start(&view.partition, target, &Brokers(view)) {
            out.push(self.store(Request::Swap {
                expect: view.partition_revision,
                controller_epoch: Some(epoch),
                state,
            }));
        }
    }

    /// As controller: a new leader (or a smaller ISR) when the store shows one is needed,
    /// and a reassignment completed once its new replicas are in sync.
    fn control(&self, snapshot: &Snapshot, epoch: i64, out: &mut Vec<Msg>) {
        let elected = elect(&snapshot.partition, &Brokers(snapshot));
        let settled = elected.as_ref().unwrap_or(&snapshot.partition);
        if let Some(state) = complete(settled, &Brokers(snapshot)).or(elected) {
            let expect = snapshot.partition_revision;
            out.push(self.store(Request::Swap {
                expect,
                controller_epoch: Some(epoch),
                state,
            }));
        }
    }

    pub fn on_fetch(
        &mut self,
        req: FetchRequest,
        incarnation: u32,
        now: i64,
        out: &mut Vec<Msg>,
        events: &mut Vec<Event>,
    ) {
        let view = &self.view;
        let eligible = |n: NodeId| view.as_ref().is_some_and(|v| Brokers(v).eligible(n));
        let leo = self.log.len() as Offset;
        let answer = match self.replica.on_fetch(req, leo, now, eligible) {
            Ok((
                FetchAnswer::Records {
                    from,
                    high_watermark,
                },
                change,
            )) => {
                if let Some(change) = change {
                    self.send_isr_change(change, out);
                }
                let end = (from as usize + FETCH_MAX).min(self.log.len());
                Answer::Records {
                    entries: self.log[from as usize..end].to_vec(),
                    high_watermark,
                }
            }
            Ok((FetchAnswer::Diverging { epoch, end_offset }, _)) => {
                Answer::Diverging { epoch, end_offset }
            }
            Ok(_) | Err(_) => Answer::Refused,
        };
        out.push(Msg::Fetched {
            to: req.follower,
            incarnation,
            request: req,
            answer,
        });
        self.settle(out, events);
    }

    pub fn on_fetched(&mut self, request: FetchRequest, answer: Answer, events: &mut Vec<Event>) {
        let fetch_offset = request.fetch_offset;
        match answer {
            Answer::Records {
                entries,
                high_watermark,
            } => {
                let received = Received {
                    correlation: request.correlation,
                    leader_epoch: request.current_leader_epoch,
                    fetch_offset,
                    high_watermark,
                    new_end: fetch_offset + entries.len() as Offset,
                };
                if self
                    .replica
                    .on_records(received, &runs(&entries, fetch_offset), self.leo())
                {
                    self.log.extend(entries);
                }
            }
            Answer::Diverging { epoch, end_offset } => {
                let hw = self.replica.high_watermark();
                let cut = self
                    .replica
                    .on_diverging(&request, (epoch, end_offset), self.leo());
                if let Some(end) = cut {
                    events.push(Event::Truncated {
                        node: self.id,
                        end,
                        high_watermark: hw,
                    });
                    self.log.truncate(end as usize);
                }
            }
            Answer::Refused => {}
        }
    }

    pub fn on_produce(&mut self, id: u64, out: &mut Vec<Msg>, events: &mut Vec<Event>) {
        let Ok(epoch) = self.replica.append(MIN_INSYNC) else {
            return;
        };
        let offset = self.leo();
        self.log.push(Entry { epoch, id });
        events.push(Event::Appended {
            node: self.id,
            epoch,
        });
        self.replica.appended(self.leo());
        self.waiting.push((offset, id, epoch));
        self.settle(out, events);
    }

    /// acks=all: an append is acknowledged once the high watermark passes it while this
    /// node still leads in its epoch with at least min.insync.replicas in sync; a lost
    /// leadership fails the rest (the client never hears of them).
    fn settle(&mut self, out: &mut Vec<Msg>, _events: &mut Vec<Event>) {
        let (epoch, isr) = match self.replica.role() {
            Role::Leader(l) => (l.epoch, l.isr.len()),
            _ => {
                self.waiting.clear();
                return;
            }
        };
        let hw = self.replica.high_watermark();
        self.waiting.retain(|&(offset, id, e)| {
            if e != epoch {
                return false;
            }
            if offset < hw && isr >= MIN_INSYNC {
                out.push(Msg::Acked { id, offset });
                return false;
            }
            true
        });
    }
}
