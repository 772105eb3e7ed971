//! Connection slots of one listener on one shard: at most `max_total` connections, and at
//! most `max_per_peer` from one peer address, so a peer that opens connections and sends
//! nothing fills its own share, never everyone's. Each protocol's listener has slots of its
//! own (Kafka's `max.connections` / `max.connections.per.ip`, split across shards).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;

pub struct Slots {
    max_total: usize,
    max_per_peer: usize,
    total: Cell<usize>,
    per_peer: RefCell<HashMap<IpAddr, usize>>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Every slot of the listener is taken.
    Full(usize),
    /// The peer holds its share.
    PeerFull(usize),
}

impl Refusal {
    pub fn describe(self, listener: &str) -> String {
        match self {
            Refusal::Full(n) => format!(
                "the {listener} listener serves at most {n} connections per shard (max.connections.per.shard); retry later"
            ),
            Refusal::PeerFull(n) => format!(
                "this address holds {n} {listener} connections on this shard, its share (max.connections.per.ip); close some first"
            ),
        }
    }
}

/// A taken slot, given back when dropped (the connection ended).
pub struct Slot {
    slots: Rc<Slots>,
    peer: Option<IpAddr>,
}

impl Slots {
    pub fn new(max_total: usize, max_per_peer: usize) -> Rc<Self> {
        Rc::new(Slots {
            max_total,
            max_per_peer: max_per_peer.max(1),
            total: Cell::new(0),
            per_peer: RefCell::new(HashMap::new()),
        })
    }

    /// A slot for a connection from `peer` (IPv4 seen through IPv6 counts as IPv4).
    pub fn take(self: &Rc<Self>, peer: Option<IpAddr>) -> Result<Slot, Refusal> {
        if self.total.get() >= self.max_total {
            return Err(Refusal::Full(self.max_total));
        }
        let peer = peer.map(|ip| ip.to_canonical());
        if let Some(ip) = peer {
            let mut per_peer = self.per_peer.borrow_mut();
            let held = per_peer.entry(ip).or_insert(0);
            if *held >= self.max_per_peer {
                return Err(Refusal::PeerFull(self.max_per_peer));
            }
            *held += 1;
            debug_assert!(*held <= self.max_per_peer, "a peer over its share");
        }
        self.total.set(self.total.get() + 1);
        debug_assert!(self.total.get() <= self.max_total, "slots over their limit");
        Ok(Slot {
            slots: self.clone(),
            peer,
        })
    }

    /// Connections holding a slot now.
    pub fn taken(&self) -> usize {
        self.total.get()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let s = &self.slots;
        // Each slot is given back once: the count covers every live slot.
        assert!(s.total.get() > 0, "a slot given back twice");
        s.total.set(s.total.get() - 1);
        if let Some(ip) = self.peer {
            let mut per_peer = s.per_peer.borrow_mut();
            debug_assert!(
                per_peer.contains_key(&ip),
                "a peer's slot outlived its count"
            );
            if let Some(held) = per_peer.get_mut(&ip) {
                *held -= 1;
                if *held == 0 {
                    per_peer.remove(&ip);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_fills_its_share_and_others_still_get_slots() {
        let slots = Slots::new(4, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "::ffff:10.0.0.2".parse().unwrap();
        let a1 = slots.take(Some(a)).unwrap();
        let _a2 = slots.take(Some(a)).unwrap();
        assert_eq!(slots.take(Some(a)).err(), Some(Refusal::PeerFull(2)));
        let _b1 = slots.take(Some(b)).unwrap();
        let _b2 = slots.take(Some("10.0.0.2".parse().unwrap())).unwrap();
        assert_eq!(
            slots.take(Some("10.0.0.3".parse().unwrap())).err(),
            Some(Refusal::Full(4))
        );
        drop(a1);
        assert_eq!(slots.taken(), 3);
        slots.take(Some(a)).unwrap();
        assert_eq!(
            slots.per_peer.borrow().len(),
            2,
            "{:?}",
            slots.per_peer.borrow()
        );
    }
}
