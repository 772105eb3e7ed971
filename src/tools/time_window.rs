//! The end of a `consume --from-time --to-time` window, per partition, and what the operator
//! is told about it. Timestamps are client-controlled: late records follow newer ones, and a
//! producer with a wrong clock puts far-future records among current ones. So a window's end
//! is not the first record with a timestamp >= to-time (kcat's rule, `--stop-at-first`): the
//! reader goes on while records inside the window can still follow, and stops once
//! `settle` records in a row are at or past to-time + `max_lateness` (an isolated
//! future-dated record does not end it), or at the log end.

use std::fmt;

/// How a window ends.
#[derive(Debug, Clone, Copy)]
pub struct WindowRule {
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// kcat's rule: stop at the first record with timestamp >= to, and print every record
    /// before it (even one dated before from).
    pub stop_at_first: bool,
    /// How much older than records before it a record may be and still be waited for.
    pub max_lateness_ms: i64,
    /// Consecutive records past to + max_lateness that end the window.
    pub settle: u64,
}

/// What to do with one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Print,
    Skip,
    /// Stop this partition (the record is not printed).
    Stop,
}

/// One partition's window: counts, out-of-order timestamps, where and why it stopped.
#[derive(Debug, Clone, Default)]
pub struct PartitionWindow {
    pub partition: i32,
    pub printed: u64,
    pub before_window: u64,
    pub after_window: u64,
    run_past_end: u64,
    running_max: Option<i64>,
    pub out_of_order: u64,
    /// Smallest and largest timestamp of the records seen out of order.
    pub out_of_order_range: Option<(i64, i64)>,
    pub stopped_at: Option<i64>,
    pub stop_reason: Option<String>,
}

impl PartitionWindow {
    pub fn new(partition: i32) -> Self {
        PartitionWindow {
            partition,
            ..Default::default()
        }
    }

    /// Judges the record at `offset` with timestamp `ts`.
    pub fn judge(&mut self, rule: &WindowRule, offset: i64, ts: i64) -> Verdict {
        self.note_order(ts);
        let Some(to) = rule.to else {
            return self.print();
        };
        if ts >= to {
            if rule.stop_at_first {
                return self.stop(offset, format!("first record at or past --to-time ({ts})"));
            }
            self.after_window += 1;
            if ts >= to.saturating_add(rule.max_lateness_ms) {
                self.run_past_end += 1;
                if self.run_past_end >= rule.settle {
                    return self.stop(
                        offset,
                        format!(
                            "{} records in a row at or past --to-time + --max-lateness-ms",
                            rule.settle
                        ),
                    );
                }
            } else {
                self.run_past_end = 0;
            }
            assert!(
                self.run_past_end <= self.after_window,
                "a run past the end is after the window"
            );
            return Verdict::Skip;
        }
        self.run_past_end = 0;
        // kcat prints everything between its start and stop offsets, late records included.
        if !rule.stop_at_first && rule.from.is_some_and(|from| ts < from) {
            self.before_window += 1;
            return Verdict::Skip;
        }
        self.print()
    }

    fn print(&mut self) -> Verdict {
        self.printed += 1;
        Verdict::Print
    }

    fn stop(&mut self, offset: i64, why: String) -> Verdict {
        assert!(self.stopped_at.is_none(), "a window stops once");
        self.stopped_at = Some(offset);
        self.stop_reason = Some(why);
        Verdict::Stop
    }

    /// Marks where reading ended when no rule stopped it.
    pub fn ended(&mut self, offset: i64, why: &str) {
        if self.stop_reason.is_none() {
            self.stopped_at = Some(offset);
            self.stop_reason = Some(why.to_string());
        }
    }

    fn note_order(&mut self, ts: i64) {
        match self.running_max {
            Some(max) if ts < max => {
                self.out_of_order += 1;
                self.out_of_order_range = Some(match self.out_of_order_range {
                    Some((lo, hi)) => (lo.min(ts), hi.max(ts)),
                    None => (ts, ts),
                });
            }
            _ => self.running_max = Some(ts),
        }
    }
}

/// What `consume` tells the operator on stderr after the records.
#[derive(Debug, Clone, Default)]
pub struct ConsumeSummary {
    pub printed: u64,
    pub partitions: Vec<PartitionWindow>,
    /// Partitions with no record at or after --from-time.
    pub empty: Vec<i32>,
}

impl fmt::Display for ConsumeSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Processed a total of {} messages", self.printed)?;
        for p in &self.partitions {
            write!(
                f,
                "partition {}: printed {}, skipped {} outside the window ({} before, {} after)",
                p.partition,
                p.printed,
                p.before_window + p.after_window,
                p.before_window,
                p.after_window
            )?;
            if let (Some(at), Some(why)) = (p.stopped_at, &p.stop_reason) {
                write!(f, "; stopped at offset {at}: {why}")?;
            }
            if let Some((lo, hi)) = p.out_of_order_range {
                write!(
                    f,
                    "; {} records out of timestamp order (timestamps {lo}..{hi})",
                    p.out_of_order
                )?;
            }
            writeln!(f)?;
        }
        for p in &self.empty {
            writeln!(f, "partition {p}: no record at or after --from-time")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(stop_at_first: bool) -> WindowRule {
        WindowRule {
            from: Some(100),
            to: Some(200),
            stop_at_first,
            max_lateness_ms: 50,
            settle: 3,
        }
    }

    #[test]
    fn a_future_outlier_does_not_end_the_window_but_a_settled_stream_does() {
        let mut w = PartitionWindow::new(0);
        let r = rule(false);
        let stamps = [120, 90_000_000, 150, 210, 199, 260, 261, 262];
        let verdicts: Vec<Verdict> = stamps
            .iter()
            .enumerate()
            .map(|(i, &t)| w.judge(&r, i as i64, t))
            .collect();
        use Verdict::*;
        // The +25 h outlier is skipped, the late 199 still printed, three in a row past
        // to + lateness end it.
        assert_eq!(
            verdicts,
            vec![Print, Skip, Print, Skip, Print, Skip, Skip, Stop]
        );
        assert_eq!(w.printed, 3);
        assert_eq!(w.stopped_at, Some(7));
        let mut kcat = PartitionWindow::new(0);
        let first: Vec<Verdict> = stamps
            .iter()
            .take(2)
            .enumerate()
            .map(|(i, &t)| kcat.judge(&rule(true), i as i64, t))
            .collect();
        assert_eq!(first, vec![Print, Stop]);
    }
}
