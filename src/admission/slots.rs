//! Connection slots of one listener on one shard: at most `max_total` connections, and at
//! most `max_per_peer` from one peer address, so a peer that opens connections and sends
//! nothing fills its own share, never everyone's. Each listener has slots of its own (the
//! native one, and each of Kafka's `listeners`: `listener.name.<name>.max.connections`).
//! A full listener makes room by closing its longest-idle connection (the one whose last
//! request is oldest) before it refuses a newcomer, so connections parked after one
//! ApiVersions cannot lock a listener for `connections.max.idle.ms`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Instant;

pub struct Slots {
    max_total: usize,
    max_per_peer: usize,
    total: Cell<usize>,
    /// Connections told to close to make room that have not closed yet.
    evicting: Cell<usize>,
    per_peer: RefCell<HashMap<IpAddr, usize>>,
    /// Every connection holding a slot, by slot id.
    held: RefCell<HashMap<u64, Rc<Presence>>>,
    next_id: Cell<u64>,
}

/// What the slots know of a connection: since when it waits for a request (none while it
/// reads one), and whether it was told to close.
#[derive(Default)]
pub struct Presence {
    idle_since: Cell<Option<Instant>>,
    /// Requests read and not answered yet (a long poll is not idleness).
    in_flight: Cell<usize>,
    evicted: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Presence {
    /// The connection waits for its next request from now on.
    pub fn idle(&self) {
        self.idle_since.set(Some(Instant::now()));
    }

    /// The connection is reading a request.
    pub fn busy(&self) {
        self.idle_since.set(None);
    }

    /// A request was read; its reply is pending.
    pub fn request_started(&self) {
        self.in_flight.set(self.in_flight.get() + 1);
    }

    /// A request's reply was written (or dropped).
    pub fn request_done(&self) {
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
    }

    /// Since when it has neither read nor owed anything.
    fn idle_since(&self) -> Option<Instant> {
        self.idle_since.get().filter(|_| self.in_flight.get() == 0)
    }

    /// Resolves once the listener closes this connection to make room.
    pub async fn evicted(&self) {
        std::future::poll_fn(|cx| {
            if self.evicted.get() {
                Poll::Ready(())
            } else {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }

    fn evict(&self) {
        self.evicted.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Every slot of the listener is taken and none of its connections is idle.
    Full(usize),
    /// The peer holds its share.
    PeerFull(usize),
}

impl Refusal {
    pub fn describe(self, listener: &str) -> String {
        match self {
            Refusal::Full(n) => format!(
                "the {listener} listener serves at most {n} connections per shard (max.connections), all busy; retry later"
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
    id: u64,
    peer: Option<IpAddr>,
    presence: Rc<Presence>,
}

impl Slot {
    /// The connection's side of the slot.
    pub fn presence(&self) -> Rc<Presence> {
        self.presence.clone()
    }
}

impl Slots {
    pub fn new(max_total: usize, max_per_peer: usize) -> Rc<Self> {
        Rc::new(Slots {
            max_total,
            max_per_peer: max_per_peer.max(1),
            total: Cell::new(0),
            evicting: Cell::new(0),
            per_peer: RefCell::new(HashMap::new()),
            held: RefCell::new(HashMap::new()),
            next_id: Cell::new(0),
        })
    }

    /// A slot for a connection from `peer` (IPv4 seen through IPv6 counts as IPv4). A full
    /// listener first tells its longest-idle connection to close; the newcomer's slot is
    /// then counted against the one being given back.
    pub fn take(self: &Rc<Self>, peer: Option<IpAddr>) -> Result<Slot, Refusal> {
        let peer = peer.map(|ip| ip.to_canonical());
        if let Some(ip) = peer {
            if self.per_peer.borrow().get(&ip).copied().unwrap_or(0) >= self.max_per_peer {
                return Err(Refusal::PeerFull(self.max_per_peer));
            }
        }
        if self.total.get() - self.evicting.get() >= self.max_total && !self.evict_longest_idle() {
            return Err(Refusal::Full(self.max_total));
        }
        if let Some(ip) = peer {
            *self.per_peer.borrow_mut().entry(ip).or_insert(0) += 1;
        }
        self.total.set(self.total.get() + 1);
        // Over the limit only by connections already told to close.
        assert!(self.total.get() - self.evicting.get() <= self.max_total);
        let id = self.next_id.replace(self.next_id.get() + 1);
        let presence = Rc::new(Presence::default());
        self.held.borrow_mut().insert(id, presence.clone());
        Ok(Slot {
            slots: self.clone(),
            id,
            peer,
            presence,
        })
    }

    /// Tells the connection idle the longest to close; false if none is idle.
    fn evict_longest_idle(&self) -> bool {
        let held = self.held.borrow();
        let idle = held.values().filter(|p| !p.evicted.get());
        let Some(victim) = idle
            .filter_map(|p| Some((p.idle_since()?, p)))
            .min_by_key(|(since, _)| *since)
        else {
            return false;
        };
        victim.1.evict();
        self.evicting.set(self.evicting.get() + 1);
        true
    }

    /// Connections holding a slot now.
    #[cfg(test)]
    fn taken(&self) -> usize {
        self.total.get()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let s = &self.slots;
        // Each slot is given back once: the count covers every live slot.
        assert!(s.total.get() > 0, "a slot given back twice");
        s.total.set(s.total.get() - 1);
        s.held.borrow_mut().remove(&self.id);
        if self.presence.evicted.get() {
            s.evicting.set(s.evicting.get() - 1);
        }
        if let Some(ip) = self.peer {
            let mut per_peer = s.per_peer.borrow_mut();
            assert!(
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
            Some(Refusal::Full(4)),
            "nobody idle: refused"
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

    #[test]
    fn a_full_listener_closes_its_longest_idle_connection_for_a_newcomer() {
        let slots = Slots::new(2, 10);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let (old, young) = (slots.take(Some(ip)).unwrap(), slots.take(Some(ip)).unwrap());
        old.presence().idle();
        std::thread::sleep(std::time::Duration::from_millis(2));
        young.presence().idle();
        let newcomer = slots.take(Some(ip)).unwrap();
        assert!(old.presence().evicted.get() && !young.presence().evicted.get());
        assert_eq!(slots.taken(), 3, "until the evicted one closes");
        young.presence().busy();
        newcomer.presence().busy();
        assert_eq!(
            slots.take(Some(ip)).err(),
            Some(Refusal::Full(2)),
            "none idle"
        );
        drop(old);
        assert_eq!((slots.taken(), slots.evicting.get()), (2, 0));
    }
}
