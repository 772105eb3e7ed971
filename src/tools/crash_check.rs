//! `shardlog crash-check produce|verify`: the two halves of the kill -9 test
//! (`scripts/crash-loop.sh`). `produce` writes with acks=all from several connections and
//! appends one line per acknowledged record to an acks file: `partition offset crc32c(value)`.
//! `verify` reads every partition back and checks that every acknowledged record is there,
//! byte-identical (same checksum) in a CRC-valid batch, and that offsets have no gaps.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::client::Client;
use crate::format::batch::{check_framing_and_crc, split_batches, RecordsSection};
use crate::format::{BatchBuilder, RecordSpec};
use crate::protocol::ACKS_ALL;

/// Connects, retrying while the server starts.
async fn connect_retrying(bootstrap: &str, wait: Duration) -> Result<Client, String> {
    let deadline = Instant::now() + wait;
    loop {
        match Client::connect(bootstrap).await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() >= deadline => return Err(e.to_string()),
            Err(_) => glommio::timer::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// One connection of the crash check's producer: random batches to random partitions,
/// each acknowledged record appended to the acks file.
struct Producer {
    conn: usize,
    bootstrap: String,
    topic: String,
    partitions: i32,
    acks: std::rc::Rc<std::cell::RefCell<std::fs::File>>,
    rng: fastrand::Rng,
}

impl Producer {
    /// Produces until `deadline` or until the server dies; returns the records acknowledged.
    async fn run(mut self, deadline: Instant) -> u64 {
        let Ok(mut c) = Client::connect(&self.bootstrap).await else {
            return 0;
        };
        let mut acked = 0u64;
        let mut n = 0u64;
        while Instant::now() < deadline {
            let p = self.rng.i32(0..self.partitions);
            let values = self.values(n);
            n += 1;
            let mut b = BatchBuilder::new(16 * 1024);
            for v in &values {
                b.push(RecordSpec::new(None, Some(v)).timestamp(crate::time::now_ms()));
            }
            let Ok(Some((base, _, _))) = c
                .produce(&self.topic, p, ACKS_ALL, Bytes::from(b.build()))
                .await
            else {
                return acked; // the server died: stop
            };
            if !self.record_acks(p, base, &values) {
                return acked;
            }
            acked += values.len() as u64;
        }
        acked
    }

    /// 1 to 5 values, each naming its connection, batch and index, padded at random.
    fn values(&mut self, n: u64) -> Vec<Vec<u8>> {
        let count = self.rng.usize(1..=5);
        (0..count)
            .map(|i| {
                let len = self.rng.usize(0..3000);
                let mut v = format!("c{}-n{n}-i{i}-", self.conn).into_bytes();
                v.extend((0..len).map(|_| self.rng.alphabetic() as u8));
                v
            })
            .collect()
    }

    /// Appends `partition offset crc` per acknowledged record; false if the file fails.
    fn record_acks(&self, p: i32, base: i64, values: &[Vec<u8>]) -> bool {
        let mut f = self.acks.borrow_mut();
        values.iter().enumerate().all(|(i, v)| {
            // One write per line: a kill of the producer never leaves half a line that
            // claims an ack.
            let line = format!("{p} {} {}\n", base + i as i64, crc32c::crc32c(v));
            f.write_all(line.as_bytes()).is_ok()
        })
    }
}

/// Produces until the server goes away (or `duration` passes); returns acknowledged records.
pub async fn produce(
    bootstrap: &str,
    topic: &str,
    acks_file: &std::path::Path,
    connections: usize,
    duration: Duration,
    seed: u64,
) -> Result<u64, String> {
    let mut admin = connect_retrying(bootstrap, Duration::from_secs(20)).await?;
    let partitions = super::topic_metadata(&mut admin, topic)
        .await?
        .partitions
        .len() as i32;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(acks_file)
        .map_err(|e| format!("opening {}: {e}", acks_file.display()))?;
    let file = std::rc::Rc::new(std::cell::RefCell::new(file));
    let deadline = Instant::now() + duration;
    let tasks: Vec<_> = (0..connections)
        .map(|conn| {
            let producer = Producer {
                conn,
                bootstrap: bootstrap.to_string(),
                topic: topic.to_string(),
                partitions,
                acks: file.clone(),
                rng: fastrand::Rng::with_seed(seed ^ (conn as u64 + 1)),
            };
            crate::tasks::spawn(producer.run(deadline))
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await;
    }
    file.borrow_mut().sync_all().map_err(|e| e.to_string())?;
    Ok(total)
}

/// Result of a verification.
#[derive(Debug, Default)]
pub struct Verified {
    pub acknowledged: u64,
    pub records_in_log: u64,
}

/// Checks the log against the acks file.
pub async fn verify(
    bootstrap: &str,
    topic: &str,
    acks_file: &std::path::Path,
) -> Result<Verified, String> {
    let text = std::fs::read_to_string(acks_file)
        .map_err(|e| format!("reading {}: {e}", acks_file.display()))?;
    let mut acked = parse_acks(&text)?;
    let mut c = connect_retrying(bootstrap, Duration::from_secs(30)).await?;
    let partitions = super::topic_metadata(&mut c, topic).await?.partitions.len() as i32;
    let mut in_log = 0u64;
    for p in 0..partitions {
        in_log += verify_partition(&mut c, topic, p, &mut acked).await?;
    }
    if let Some(((p, o), _)) = acked.iter().min() {
        return Err(format!(
            "{} acknowledged records are missing, first: partition {p} offset {o}",
            acked.len()
        ));
    }
    Ok(Verified {
        acknowledged: text.lines().count() as u64,
        records_in_log: in_log,
    })
}

/// The acks file: one `partition offset crc32c` per acknowledged record.
fn parse_acks(text: &str) -> Result<HashMap<(i32, i64), u32>, String> {
    let mut acked = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let parts: Vec<&str> = line.split(' ').collect();
        let parsed = (parts.len() == 3)
            .then(|| {
                Some((
                    parts[0].parse().ok()?,
                    parts[1].parse().ok()?,
                    parts[2].parse().ok()?,
                ))
            })
            .flatten();
        let Some((p, o, crc)) = parsed else {
            return Err(format!("acks file line {}: {line:?} is malformed", n + 1));
        };
        if let Some(prev) = acked.insert((p, o), crc) {
            if prev != crc {
                return Err(format!(
                    "offset {o} of partition {p} was acknowledged twice with different data"
                ));
            }
        }
    }
    Ok(acked)
}

/// Reads partition `p` from offset 0 to its end: offsets without gaps, every batch's CRC,
/// and each acknowledged record's checksum (removed from `acked` once seen). Returns the
/// records in the log.
async fn verify_partition(
    c: &mut crate::client::Client,
    topic: &str,
    p: i32,
    acked: &mut HashMap<(i32, i64), u32>,
) -> Result<u64, String> {
    let end = c
        .list_offsets(topic, p, crate::log::LATEST_TIMESTAMP)
        .await
        .map_err(|e| e.to_string())?
        .map_or(0, |x| x.0);
    let mut next = 0i64;
    while next < end {
        let from = next;
        let f = c
            .fetch(topic, p, next, 1 << 20)
            .await
            .map_err(|e| format!("fetching partition {p} at {next}: {e}"))?;
        let batches =
            split_batches(&f.records).map_err(|e| format!("partition {p} at {next}: {e}"))?;
        for (s, h) in batches {
            let bytes = &f.records[s..s + h.size()];
            check_framing_and_crc(bytes)
                .map_err(|e| format!("partition {p} batch {}: {e}", h.base_offset))?;
            let section = RecordsSection::of(bytes, &h).map_err(|e| e.to_string())?;
            for r in section.decode().map_err(|e| e.to_string())? {
                if r.offset < next {
                    continue;
                }
                if r.offset != next {
                    return Err(format!(
                        "partition {p}: offset {next} is missing (found {})",
                        r.offset
                    ));
                }
                if let Some(crc) = acked.remove(&(p, r.offset)) {
                    let got = crc32c::crc32c(r.value.unwrap_or_default());
                    if got != crc {
                        return Err(format!(
                            "partition {p} offset {}: checksum {got} != acknowledged {crc}",
                            r.offset
                        ));
                    }
                }
                next += 1;
            }
        }
        if next == from {
            return Err(format!(
                "partition {p}: nothing served at {next}, below its end {end}"
            ));
        }
    }
    assert!(next >= end, "read to the end");
    Ok(next as u64)
}
