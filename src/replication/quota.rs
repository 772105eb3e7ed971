//! Kafka's replication quota (leader/follower.replication.throttled.rate) as a token
//! bucket without I/O: `rate` bytes a second, a burst of one second's worth. Bytes
//! recorded may overdraw it; while it is overdrawn the throttled replicas get nothing, so
//! over any stretch longer than a second they average at most the rate. Only replicas
//! that are not in sync are ever throttled (Kafka's rule), so acks=all never waits on it.

use super::Millis;

#[derive(Debug, Clone, PartialEq)]
pub struct Quota {
    /// Bytes a second.
    rate: u64,
    /// Bytes that may go now (negative: overdrawn).
    available: f64,
    at: Millis,
}

impl Quota {
    /// A full bucket at `now`.
    pub fn new(rate: u64, now: Millis) -> Quota {
        assert!(rate > 0, "a quota lets something through");
        Quota {
            rate,
            available: rate as f64,
            at: now,
        }
    }

    pub fn rate(&self) -> u64 {
        self.rate
    }

    fn refill(&mut self, now: Millis) {
        let elapsed = (now - self.at).max(0) as f64 / 1000.0;
        self.available = (self.available + elapsed * self.rate as f64).min(self.rate as f64);
        self.at = self.at.max(now);
    }

    /// Whether the throttled replicas must wait (the bucket is overdrawn).
    pub fn exceeded(&mut self, now: Millis) -> bool {
        self.refill(now);
        self.available <= 0.0
    }

    /// `bytes` of throttled replicas went out.
    pub fn record(&mut self, bytes: u64, now: Millis) {
        self.refill(now);
        self.available -= bytes as f64;
        assert!(
            self.available <= self.rate as f64,
            "never more than a second's burst"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_averages_its_rate_after_a_one_second_burst() {
        let mut q = Quota::new(1_000, 0);
        assert!(!q.exceeded(0));
        q.record(1_500, 0);
        assert!(q.exceeded(0), "overdrawn by the burst");
        assert!(q.exceeded(499), "500 bytes back by 0.5 s: still 0");
        assert!(!q.exceeded(501));
        // Sending whenever allowed, 100 bytes at a time, for 10 s: about the rate.
        let mut sent = 0;
        for now in 501..10_501 {
            if !q.exceeded(now) {
                q.record(100, now);
                sent += 100;
            }
        }
        assert!((9_900..=11_100).contains(&sent), "{sent} bytes in 10 s");
        assert!(
            !Quota::new(5, 0).exceeded(1_000_000),
            "a full bucket is capped, never overflows"
        );
    }
}
