//! A deterministic simulation of replication and the controller (issue 41): four nodes,
//! one partition with three replicas and min.insync.replicas 2, a model etcd, and a
//! network that loses, delays, reorders and duplicates every message, while nodes crash
//! (losing all but their log), pause past their lease, have their clocks jump, and stop
//! by controlled shutdown (marked leaving, they stop once the controller moved what they
//! led, or after a bound), and operators reassign the partition to three random nodes (the
//! controller adds the new replicas, completes the move once they are in sync, and a node
//! moved off empties its copy). A node's views only move forward, as the server's watch
//! channel gives them. Every
//! decision is made by `shardlog::replication`; after every step the checks hold:
//! no acknowledged record lost, no two nodes appending in the same leader epoch, no
//! replica differing from another below its high watermark (so every reader, who reads
//! below it, sees one order), no truncation below a replica's high watermark; and after the
//! faults stop, the cluster heals (checked once the last change has reached every node and
//! the leader's high watermark has caught up, within a bound): one leader holding every
//! acknowledged record, its in-sync followers identical to it.
//!
//! `REPLICATION_SIM_CASES` seeds (default 2000) from `REPLICATION_SIM_SEED` (default
//! random); a failing seed replays exactly with `REPLICATION_SIM_SEED=<seed>
//! REPLICATION_SIM_CASES=1`. A longer run: `REPLICATION_SIM_CASES=100000 cargo test
//! --release --test engine replication_sim`.

mod checks;
mod node;
mod store;

use std::collections::BTreeMap;

use shardlog::replication::controller::place;
use shardlog::replication::{Epoch, FetchRequest, NodeId, Offset, PartitionState};

use crate::common::seeds;
use checks::Checks;
use node::Node;
use store::{Reply, Request, Store};

const NODES: NodeId = 4;
const STEP_MS: i64 = 10;
const HEARTBEAT_MS: i64 = 100;
const LEASE_TTL_MS: i64 = 600;
pub const MAX_LAG_MS: i64 = 400;
pub const MIN_INSYNC: usize = 2;
pub const FETCH_MAX: usize = 4;
const FAULT_STEPS: usize = 1500;
const HEAL_STEPS: usize = 1500;

/// A record: the epoch it was appended in and the client's id for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub epoch: Epoch,
    pub id: u64,
}

#[derive(Debug, Clone)]
pub enum Answer {
    Records {
        entries: Vec<Entry>,
        high_watermark: Offset,
    },
    Diverging {
        epoch: Epoch,
        end_offset: Offset,
    },
    Refused,
}

#[derive(Debug, Clone)]
pub enum Msg {
    ToStore {
        from: NodeId,
        incarnation: u32,
        req: Request,
    },
    FromStore {
        to: NodeId,
        incarnation: u32,
        reply: Reply,
    },
    Fetch {
        to: NodeId,
        incarnation: u32,
        req: FetchRequest,
    },
    Fetched {
        to: NodeId,
        incarnation: u32,
        /// The fetch answered (a connection pairs them by correlation id).
        request: FetchRequest,
        answer: Answer,
    },
    Produce {
        to: NodeId,
        id: u64,
    },
    Acked {
        id: u64,
        offset: Offset,
    },
}

/// What the checks watch besides the nodes' state.
#[derive(Debug, Clone)]
pub enum Event {
    Appended {
        node: NodeId,
        epoch: Epoch,
    },
    Truncated {
        node: NodeId,
        end: Offset,
        high_watermark: Offset,
    },
    /// A node no longer a replica emptied its copy, which held `committed` below its
    /// high watermark.
    Removed {
        node: NodeId,
        committed: Vec<Entry>,
    },
}

/// How often each fault strikes while faults are on.
#[derive(Debug, Clone, Copy)]
struct Faults {
    drop: f64,
    duplicate: f64,
    late: f64,
    crash: f64,
    pause: f64,
    clock_jump: f64,
    /// A controlled shutdown (SIGTERM): the node hands off, stops, and comes back later.
    leave: f64,
    /// An operator asks the controller to move the partition to three random nodes.
    reassign: f64,
}

const CALM: Faults = Faults {
    drop: 0.0,
    duplicate: 0.0,
    late: 0.0,
    crash: 0.0,
    pause: 0.0,
    clock_jump: 0.0,
    leave: 0.0,
    reassign: 0.0,
};

/// How long a leaving node waits for its leaderships to move before it stops anyway.
const LEAVE_BOUND_MS: i64 = 1_000;

struct World {
    rng: fastrand::Rng,
    now: i64,
    seq: u64,
    /// In flight: (delivery time, sequence) -> message.
    network: BTreeMap<(i64, u64), Msg>,
    store: Store,
    nodes: Vec<Node>,
    /// When each crashed node starts again.
    restarts: BTreeMap<NodeId, i64>,
    next_record: u64,
    checks: Checks,
}

impl World {
    fn new(seed: u64) -> World {
        let mut rng = fastrand::Rng::with_seed(seed);
        let brokers: Vec<NodeId> = (1..=NODES).collect();
        let start = rng.usize(..brokers.len());
        let shift = rng.usize(..brokers.len());
        let replicas = place(1, 3, &brokers, start, shift).unwrap().remove(0);
        let partition = PartitionState {
            isr: replicas.clone(),
            replicas,
            leader: None,
            leader_epoch: 0,
            leader_broker_epoch: -1,
            partition_epoch: 0,
            adding: vec![],
            removing: vec![],
        };
        World {
            rng,
            now: 0,
            seq: 0,
            network: BTreeMap::new(),
            store: Store::new(partition, LEASE_TTL_MS),
            nodes: brokers.into_iter().map(Node::new).collect(),
            restarts: BTreeMap::new(),
            next_record: 1,
            checks: Checks::default(),
        }
    }

    fn node(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[(id - 1) as usize]
    }

    /// Puts a message on the wire: lost, late, or duplicated as `faults` say.
    fn send(&mut self, msg: Msg, faults: Faults) {
        if self.rng.f64() < faults.drop {
            return;
        }
        let copies = if self.rng.f64() < faults.duplicate {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let delay = match self.rng.f64() < faults.late {
                true => self.rng.i64(200..2_000),
                false => self.rng.i64(1..30),
            };
            self.seq += 1;
            self.network
                .insert((self.now + delay, self.seq), msg.clone());
        }
    }

    fn step(&mut self, faults: Faults) {
        self.now += STEP_MS;
        self.store.expire(self.now);
        self.deliver_due(faults);
        self.tick_nodes(faults);
        self.inject(faults);
        self.stop_leaving(faults);
        self.produce(faults);
        self.checks.after_step(&self.nodes);
    }

    fn deliver_due(&mut self, faults: Faults) {
        let due: Vec<(i64, u64)> = self
            .network
            .range(..=(self.now, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        let mut due: Vec<Msg> = due
            .into_iter()
            .filter_map(|k| self.network.remove(&k))
            .collect();
        self.rng.shuffle(&mut due);
        for msg in due {
            self.deliver(msg, faults);
        }
    }

    /// Whether `id` can take a message now; a paused node's messages wait for it.
    fn reachable(&mut self, id: NodeId, msg: &Msg) -> bool {
        let (up, paused_until) = (self.node(id).up, self.node(id).paused_until);
        if up && paused_until > self.now {
            self.seq += 1;
            self.network.insert((paused_until, self.seq), msg.clone());
        }
        up && paused_until <= self.now
    }

    fn deliver(&mut self, msg: Msg, faults: Faults) {
        let mut out = Vec::new();
        let mut events = Vec::new();
        let now = self.now;
        match msg.clone() {
            Msg::ToStore {
                from,
                incarnation,
                req,
            } => {
                let reply = self.store.handle(req, now);
                out.push(Msg::FromStore {
                    to: from,
                    incarnation,
                    reply,
                });
            }
            Msg::FromStore {
                to,
                incarnation,
                reply,
            } => {
                if self.reachable(to, &msg) && self.node(to).incarnation == incarnation {
                    let node = self.node(to);
                    let local = now + node.clock_offset;
                    node.on_store_reply(reply, local, &mut out, &mut events);
                }
            }
            Msg::Fetch {
                to,
                incarnation,
                req,
            } => {
                if self.reachable(to, &msg) {
                    let node = self.node(to);
                    let local = now + node.clock_offset;
                    node.on_fetch(req, incarnation, local, &mut out, &mut events);
                }
            }
            Msg::Fetched {
                to,
                incarnation,
                request,
                answer,
            } => {
                if self.reachable(to, &msg) && self.node(to).incarnation == incarnation {
                    self.node(to).on_fetched(request, answer, &mut events);
                }
            }
            Msg::Produce { to, id } => {
                if self.reachable(to, &msg) {
                    self.node(to).on_produce(id, &mut out, &mut events);
                }
            }
            Msg::Acked { id, offset } => self.checks.acked(id, offset),
        }
        self.checks.events(&events);
        for m in out {
            self.send(m, faults);
        }
    }

    fn tick_nodes(&mut self, faults: Faults) {
        if self.now % HEARTBEAT_MS != 0 {
            return;
        }
        let mut out = Vec::new();
        for node in self
            .nodes
            .iter_mut()
            .filter(|n| n.up && n.paused_until <= self.now)
        {
            node.tick(self.now + node.clock_offset, &mut out);
        }
        for m in out {
            self.send(m, faults);
        }
    }

    /// Crashes, restarts, pauses and clock jumps.
    fn inject(&mut self, faults: Faults) {
        let due: Vec<NodeId> = self
            .restarts
            .iter()
            .filter(|(_, &t)| t <= self.now)
            .map(|(&n, _)| n)
            .collect();
        for id in due {
            self.restarts.remove(&id);
            self.node(id).restart();
        }
        let id = self.rng.i32(1..=NODES);
        let r = self.rng.f64();
        let now = self.now;
        if r < faults.crash && self.node(id).up {
            self.node(id).crash();
            let back = now + self.rng.i64(50..3_000);
            self.restarts.insert(id, back);
        } else if r < faults.crash + faults.pause {
            let until = now + self.rng.i64(100..2_000);
            self.node(id).paused_until = until;
        } else if r < faults.crash + faults.pause + faults.clock_jump {
            let jump = self.rng.i64(-1_000..3_000);
            self.node(id).clock_offset += jump;
        } else if r < faults.crash + faults.pause + faults.clock_jump + faults.leave {
            let node = self.node(id);
            if node.up && node.leaving_since.is_none() {
                node.leaving_since = Some(now);
            }
        } else if r < faults.crash
            + faults.pause
            + faults.clock_jump
            + faults.leave
            + faults.reassign
        {
            self.reassign(faults);
        }
    }

    /// An operator's reassignment to three of the four nodes in a random order, asked of
    /// the controller the store names (if it is up to hear it).
    fn reassign(&mut self, faults: Faults) {
        let Some((controller, _)) = self.store.snapshot().controller else {
            return;
        };
        let mut target: Vec<NodeId> = (1..=NODES).collect();
        self.rng.shuffle(&mut target);
        target.truncate(3);
        let now = self.now;
        let node = self.node(controller);
        if !node.up || node.paused_until > now {
            return;
        }
        let mut out = Vec::new();
        node.reassign(&target, &mut out);
        self.checks.reassignments += out.len() as u64;
        for m in out {
            self.send(m, faults);
        }
    }

    /// Leaving nodes stop once handed off (or past their bound), and come back later.
    fn stop_leaving(&mut self, faults: Faults) {
        let now = self.now;
        let mut out = Vec::new();
        for id in 1..=NODES {
            let node = self.node(id);
            let Some(since) = node.leaving_since.filter(|_| node.up) else {
                continue;
            };
            if node.handed_off() || now - since > LEAVE_BOUND_MS {
                node.stop(&mut out);
                self.checks.left(id);
                let back = now + self.rng.i64(50..3_000);
                self.restarts.insert(id, back);
            }
        }
        for m in out {
            self.send(m, faults);
        }
    }

    /// A producer sends a new record, mostly to the leader the store names.
    fn produce(&mut self, faults: Faults) {
        if self.rng.f64() > 0.3 {
            return;
        }
        let to = match (self.store.snapshot().partition.leader, self.rng.f64() < 0.1) {
            (Some(leader), false) => leader,
            _ => self.rng.i32(1..=NODES),
        };
        let id = self.next_record;
        self.next_record += 1;
        self.send(Msg::Produce { to, id }, faults);
    }

    /// Faults stop: every node up and running, the network reliable.
    fn heal(&mut self) {
        for id in 1..=NODES {
            if !self.node(id).up {
                self.node(id).restart();
            }
            self.node(id).paused_until = 0;
        }
        self.restarts.clear();
        for _ in 0..HEAL_STEPS {
            self.step(CALM);
        }
        // A change made in the last steps may still be on its way to some node, and a
        // leader elected then has not heard from its followers yet: the checks look once
        // every node's view has the store's latest and the leader's high watermark has
        // caught up with the committed log (bounded: past it, the checks fail).
        for _ in 0..HEAL_STEPS {
            if self.settled() {
                break;
            }
            self.step(CALM);
        }
    }

    fn settled(&self) -> bool {
        let store = self.store.snapshot();
        let latest = store.partition_revision;
        let seen = |n: &Node| {
            n.view
                .as_ref()
                .is_some_and(|v| v.partition_revision == latest)
        };
        let Some(leader) = store.partition.leader else {
            return false;
        };
        let leading = &self.nodes[(leader - 1) as usize];
        let caught_up = leading.replica.high_watermark() as usize >= self.checks.committed_len();
        self.nodes.iter().all(seen) && leading.replica.leader_isr().is_some() && caught_up
    }
}

fn run(seed: u64) -> checks::Summary {
    let mut world = World::new(seed);
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    let faults = Faults {
        drop: rng.f64() * 0.2,
        duplicate: rng.f64() * 0.1,
        late: rng.f64() * 0.05,
        crash: rng.f64() * 0.01,
        pause: rng.f64() * 0.01,
        clock_jump: rng.f64() * 0.005,
        leave: rng.f64() * 0.01,
        reassign: rng.f64() * 0.01,
    };
    for _ in 0..FAULT_STEPS {
        world.step(faults);
    }
    world.heal();
    world
        .checks
        .after_healing(&world.nodes, &world.store.snapshot())
}

#[test]
fn replication_keeps_every_acknowledged_record_through_seeded_faults() {
    let mut total = checks::Summary::default();
    // Seeds that found bugs run every time: an abandoned ISR change whose earlier copy had
    // landed (the leader's high watermark passed records the next leader did not hold),
    // a leader elected in the last healing step checked before it heard of it, and a
    // follower that truncated to the leader's end of an epoch it did not hold itself (its
    // divergent records kept, its fetches refused for ever).
    let found = [
        15_047_013_117_820_128_482,
        12_984_129_544_627_256_908,
        2_000_754_670_372_808_690,
    ];
    for seed in found.into_iter().chain(seeds("REPLICATION_SIM", 2000)) {
        let summary = std::panic::catch_unwind(|| run(seed))
            .unwrap_or_else(|_| panic!("seed {seed} failed: replay with REPLICATION_SIM_SEED={seed} REPLICATION_SIM_CASES=1"));
        total.add(&summary);
    }
    eprintln!("replication simulation: {total:?}");
    assert!(
        total.acked > 0
            && total.leader_changes > 0
            && total.controlled_stops > 0
            && total.reassignments > 0,
        "the runs exercised nothing: {total:?}"
    );
}
