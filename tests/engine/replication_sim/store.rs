//! A model of etcd as the cluster uses it: one linearizable store with revisions, leases
//! that expire on the store's clock, create-if-absent and compare-and-swap. Requests reach
//! it over the simulated network, so a node acts on what it read some time ago.

use std::collections::BTreeMap;

use shardlog::replication::{NodeId, PartitionState};

pub type Lease = i64;

#[derive(Debug, Clone)]
pub enum Request {
    Grant,
    KeepAlive(Lease),
    /// Registers `id` under `lease`; an earlier registration of the same node goes.
    Register {
        id: NodeId,
        lease: Lease,
    },
    Campaign {
        id: NodeId,
        lease: Lease,
    },
    /// Controlled shutdown: `id`'s registration under `lease` says it is leaving.
    Leave {
        id: NodeId,
        lease: Lease,
    },
    /// A stopping node gives up its lease (and its keys with it).
    Revoke(Lease),
    Read,
    /// Replaces the partition's state if it is still at `expect` (its mod revision), and,
    /// for a controller, if the controller key still has `controller_epoch`.
    Swap {
        expect: i64,
        controller_epoch: Option<i64>,
        state: PartitionState,
    },
}

#[derive(Debug, Clone)]
pub enum Reply {
    Granted(Lease),
    KeptAlive {
        lease: Lease,
        alive: bool,
    },
    /// The broker epoch, or -1 when the lease is gone or a newer one holds the key.
    Registered {
        lease: Lease,
        epoch: i64,
    },
    Campaigned,
    Left,
    Revoked,
    Snapshot(Snapshot),
    /// Whether the swap landed is learnt from the next read, as a lost reply would hide it.
    Swapped,
}

/// Everything a node reads in one range: one revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Live brokers and their broker epochs.
    pub brokers: BTreeMap<NodeId, i64>,
    /// Live brokers in controlled shutdown.
    pub leaving: std::collections::BTreeSet<NodeId>,
    /// The controller and its epoch.
    pub controller: Option<(NodeId, i64)>,
    pub partition: PartitionState,
    pub partition_revision: i64,
}

#[derive(Debug, Clone)]
struct Held {
    value: i64,
    created: i64,
    lease: Lease,
    leaving: bool,
}

pub struct Store {
    revision: i64,
    next_lease: Lease,
    leases: BTreeMap<Lease, i64>,
    brokers: BTreeMap<NodeId, Held>,
    controller: Option<Held>,
    partition: PartitionState,
    partition_revision: i64,
    ttl_ms: i64,
}

impl Store {
    pub fn new(partition: PartitionState, ttl_ms: i64) -> Store {
        Store {
            revision: 1,
            next_lease: 1,
            leases: BTreeMap::new(),
            brokers: BTreeMap::new(),
            controller: None,
            partition,
            partition_revision: 1,
            ttl_ms,
        }
    }

    /// Leases past their time end, and their keys with them.
    pub fn expire(&mut self, now: i64) {
        let expired: Vec<Lease> = self
            .leases
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(&l, _)| l)
            .collect();
        for lease in expired {
            self.leases.remove(&lease);
            self.brokers.retain(|_, h| h.lease != lease);
            if self.controller.as_ref().is_some_and(|h| h.lease == lease) {
                self.controller = None;
            }
            self.revision += 1;
        }
    }

    pub fn handle(&mut self, request: Request, now: i64) -> Reply {
        match request {
            Request::Grant => {
                let lease = self.next_lease;
                self.next_lease += 1;
                self.leases.insert(lease, now + self.ttl_ms);
                Reply::Granted(lease)
            }
            Request::KeepAlive(lease) => {
                let alive = self.leases.contains_key(&lease);
                if alive {
                    self.leases.insert(lease, now + self.ttl_ms);
                }
                Reply::KeptAlive { lease, alive }
            }
            Request::Register { id, lease } => self.register(id, lease),
            Request::Campaign { id, lease } => {
                if self.controller.is_none() && self.leases.contains_key(&lease) {
                    self.revision += 1;
                    let created = self.revision;
                    self.controller = Some(Held {
                        value: id as i64,
                        created,
                        lease,
                        leaving: false,
                    });
                }
                Reply::Campaigned
            }
            Request::Leave { id, lease } => {
                if let Some(held) = self.brokers.get_mut(&id).filter(|h| h.lease == lease) {
                    held.leaving = true;
                    self.revision += 1;
                }
                Reply::Left
            }
            Request::Revoke(lease) => {
                self.leases.insert(lease, now);
                self.expire(now);
                Reply::Revoked
            }
            Request::Read => Reply::Snapshot(self.snapshot()),
            Request::Swap {
                expect,
                controller_epoch,
                state,
            } => {
                self.swap(expect, controller_epoch, state);
                Reply::Swapped
            }
        }
    }

    fn register(&mut self, id: NodeId, lease: Lease) -> Reply {
        if !self.leases.contains_key(&lease) {
            return Reply::Registered { lease, epoch: -1 };
        }
        // A late request of an earlier lease never takes the key from a later one.
        match self.brokers.get(&id) {
            Some(held) if held.lease == lease => {
                return Reply::Registered {
                    lease,
                    epoch: held.created,
                }
            }
            Some(held) if held.lease > lease => return Reply::Registered { lease, epoch: -1 },
            _ => {}
        }
        self.revision += 1;
        let created = self.revision;
        self.brokers.insert(
            id,
            Held {
                value: id as i64,
                created,
                lease,
                leaving: false,
            },
        );
        Reply::Registered {
            lease,
            epoch: created,
        }
    }

    fn swap(&mut self, expect: i64, controller_epoch: Option<i64>, state: PartitionState) -> bool {
        let controller_ok = controller_epoch
            .is_none_or(|e| self.controller.as_ref().is_some_and(|c| c.created == e));
        if expect != self.partition_revision || !controller_ok {
            return false;
        }
        self.revision += 1;
        self.partition = state;
        self.partition_revision = self.revision;
        true
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            brokers: self
                .brokers
                .iter()
                .map(|(&id, h)| (id, h.created))
                .collect(),
            leaving: (self.brokers.iter())
                .filter(|(_, h)| h.leaving)
                .map(|(&id, _)| id)
                .collect(),
            controller: self
                .controller
                .as_ref()
                .map(|h| (h.value as NodeId, h.created)),
            partition: self.partition.clone(),
            partition_revision: self.partition_revision,
        }
    }
}
