//! A producer's `linger.ms` under an open-loop record rate: a batch goes out when it is full
//! or when its oldest record has waited the linger, whichever comes first. At a steady rate
//! every batch then has the same shape, so the load stays a fixed frame sent at a fixed
//! interval, and only the batch size and the oldest record's wait change.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linger {
    /// Records per batch: a full batch, or those that arrive within the linger.
    pub records: usize,
    /// How long a batch's oldest record waited before the batch was sent.
    pub oldest_record_wait: Duration,
}

impl Linger {
    /// The batches `linger_ms` makes from `rate` records/s spread over `connections`, each
    /// batch holding at most `full` records. `None` without a linger.
    pub fn of(
        linger_ms: Option<f64>,
        rate: Option<f64>,
        connections: usize,
        full: usize,
    ) -> Result<Option<Linger>, String> {
        let Some(linger_ms) = linger_ms else {
            return Ok(None);
        };
        let rate = rate.ok_or("--linger-ms needs --rate (records arriving at a rate)")?;
        if !(linger_ms.is_finite() && linger_ms >= 0.0) {
            return Err(format!("--linger-ms must be 0 or more, not {linger_ms}"));
        }
        if !(rate.is_finite() && rate > 0.0) || connections == 0 || full == 0 {
            return Err("--rate, --connections and the batch size must be positive".into());
        }
        let per_connection = rate / connections as f64;
        let linger = linger_ms / 1e3;
        // Records arrive at 0, 1/r, 2/r, ...: those at or before the linger's end join.
        let within = 1 + (linger * per_connection).floor().min(full as f64) as usize;
        let records = within.min(full);
        let oldest_record_wait = match records < full {
            true => linger,
            false => (full - 1) as f64 / per_connection,
        };
        assert!(
            oldest_record_wait <= linger + 1e-12,
            "a full batch leaves no later"
        );
        Ok(Some(Linger {
            records,
            oldest_record_wait: Duration::from_secs_f64(oldest_record_wait),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linger(ms: f64, rate: f64, connections: usize, full: usize) -> Linger {
        Linger::of(Some(ms), Some(rate), connections, full)
            .expect("valid")
            .expect("a linger")
    }

    #[test]
    fn a_slow_stream_sends_what_arrived_within_the_linger() {
        // 10,000 records/s over 2 connections: 5 per ms each, 25 + the first in 5 ms.
        let l = linger(5.0, 10_000.0, 2, 163);
        assert_eq!(l.records, 26);
        assert_eq!(l.oldest_record_wait, Duration::from_millis(5));
    }

    #[test]
    fn a_fast_stream_fills_the_batch_before_the_linger_ends() {
        // 1 M records/s on one connection: 163 records arrive in 162 us.
        let l = linger(5.0, 1e6, 1, 163);
        assert_eq!(l.records, 163);
        assert_eq!(l.oldest_record_wait, Duration::from_micros(162));
    }

    #[test]
    fn no_linger_sends_each_record_alone_unless_they_arrive_together() {
        let l = linger(0.0, 100.0, 1, 163);
        assert_eq!(l.records, 1);
        assert_eq!(l.oldest_record_wait, Duration::ZERO);
    }

    #[test]
    fn a_linger_needs_a_rate_and_sane_numbers() {
        assert_eq!(Linger::of(None, None, 1, 10), Ok(None));
        let refused = |ms, rate| Linger::of(Some(ms), rate, 1, 10).unwrap_err();
        assert!(refused(5.0, None).contains("needs --rate"));
        assert!(refused(-1.0, Some(10.0)).contains("0 or more"));
        assert!(refused(f64::NAN, Some(10.0)).contains("0 or more"));
        assert!(refused(5.0, Some(0.0)).contains("positive"));
    }
}
