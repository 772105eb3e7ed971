//! Engine benchmarks (run with `cargo bench --bench engine [-- --quick]`, or through
//! `scripts/bench.sh`, which also installs fio):
//! - batch encode / validate+decode / CRC-32C throughput (MB/s), and validation of the
//!   16 KiB batches of 100-byte records Kafka producers send, with and without two headers
//!   per record (ns per record);
//!   `cargo bench --bench engine -- codec` runs only these;
//! - offset and time index lookups (ns per lookup, 262k entries: a 1 GiB segment);
//! - append throughput of one partition through the real direct-I/O appender (MB/s), with
//!   fio's sequential O_DIRECT io_uring write (bs=1M, iodepth=8) measured on the same
//!   directory in the same run as the baseline, and the ratio between them.
//!
//! Environment: SHARDLOG_BENCH_DIR (default ./target/bench-data), SHARDLOG_BENCH_GIB
//! (append volume, default 4; 1 with --quick).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use glommio::LocalExecutorBuilder;
use shardlog::format::batch::{compute_crc, validate, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::log::offset_index::OffsetIndex;
use shardlog::log::time_index::TimeIndex;
use shardlog::log::PartitionLog;
use shardlog::LogConfig;

const MIB: f64 = 1024.0 * 1024.0;

fn one_mib_batch(record_size: usize) -> Vec<u8> {
    let value = vec![0x5au8; record_size];
    let n = (1 << 20) / (record_size + 12);
    let mut b = BatchBuilder::new(1 << 20);
    for i in 0..n {
        b.push(RecordSpec::new(None, Some(&value)).timestamp(1_700_000_000_000 + i as i64));
    }
    b.build()
}

/// A record header as the builder takes it: name and value.
type Header<'a> = (&'a str, &'a [u8]);

/// Validation of producer-shaped batches (160 records of 100 bytes, 16 KiB): what each
/// record costs the produce path, and how much of it the batch's CRC is; then the same
/// records each carrying two headers, as traced producers send them (a W3C `traceparent`
/// and a short tag).
fn small_record_validation(quick: bool) {
    let value = vec![0x5au8; 100];
    let traceparent = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let shapes: [(&str, &[Header]); 2] = [
        ("validate 16 KiB batch     ", &[]),
        (
            "  with 2 headers per record",
            &[("traceparent", traceparent), ("source", b"checkout")],
        ),
    ];
    for (label, headers) in shapes {
        let mut b = BatchBuilder::new(16 << 10);
        for i in 0..160 {
            let mut spec = RecordSpec::new(None, Some(&value)).timestamp(1_700_000_000_000 + i);
            for (k, v) in headers {
                spec = spec.header(k, Some(v));
            }
            b.push(spec);
        }
        let batch = b.build();
        let (validate_ns, crc_ns) = validation_cost(&batch, 160, quick);
        println!("{label} {validate_ns:>10.1} ns per record (CRC {crc_ns:.1})");
    }
}

/// ns per record of validating `batch` (its `records`), and of its CRC alone.
fn validation_cost(batch: &[u8], records: usize, quick: bool) -> (f64, f64) {
    let rounds = if quick { 20_000 } else { 200_000 };
    let records = (rounds * records) as f64;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(validate(black_box(batch)).unwrap());
    }
    let validate_ns = t.elapsed().as_secs_f64() * 1e9 / records;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(compute_crc(black_box(batch)));
    }
    let crc_ns = t.elapsed().as_secs_f64() * 1e9 / records;
    (validate_ns, crc_ns)
}

fn codec(quick: bool) {
    let batch = one_mib_batch(1024);
    let rounds = if quick { 200 } else { 2000 };
    let bytes = (batch.len() * rounds) as f64;

    let t = Instant::now();
    for _ in 0..rounds {
        black_box(compute_crc(black_box(&batch)));
    }
    println!(
        "crc32c                     {:>10.0} MB/s",
        bytes / MIB / t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    for _ in 0..rounds {
        black_box(validate(black_box(&batch)).unwrap());
    }
    println!(
        "validate (crc + records)   {:>10.0} MB/s",
        bytes / MIB / t.elapsed().as_secs_f64()
    );

    let (h, _) = validate(&batch).unwrap();
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(
            RecordsSection::of(black_box(&batch), &h)
                .unwrap()
                .decode()
                .unwrap(),
        );
    }
    println!(
        "decode records             {:>10.0} MB/s",
        bytes / MIB / t.elapsed().as_secs_f64()
    );

    let value = vec![0x5au8; 1024];
    let t = Instant::now();
    let enc_rounds = rounds / 4;
    for _ in 0..enc_rounds {
        let mut b = BatchBuilder::new(1 << 20);
        for i in 0..1011 {
            b.push(RecordSpec::new(None, Some(&value)).timestamp(i));
        }
        black_box(b.build());
    }
    println!(
        "encode (1 KiB records)     {:>10.0} MB/s",
        (batch.len() * enc_rounds) as f64 / MIB / t.elapsed().as_secs_f64()
    );
}

fn index_lookups(quick: bool) {
    let entries = 262_144usize;
    let mut oi = OffsetIndex::new(0, entries);
    let mut ti = TimeIndex::new(0, entries + 1);
    for i in 0..entries {
        oi.append(i as i64 * 4, (i * 4096) as u32).unwrap();
        ti.maybe_append(1_700_000_000_000 + i as i64 * 10, i as i64 * 4, false);
    }
    let n = if quick { 1_000_000 } else { 10_000_000 };
    let mut rng = fastrand::Rng::with_seed(7);
    let targets: Vec<i64> = (0..4096).map(|_| rng.i64(0..entries as i64 * 4)).collect();
    let t = Instant::now();
    for i in 0..n {
        black_box(oi.lookup(targets[i & 4095]));
    }
    println!(
        "offset index lookup        {:>10.1} ns  ({entries} entries)",
        t.elapsed().as_nanos() as f64 / n as f64
    );
    let t = Instant::now();
    for i in 0..n {
        black_box(ti.lookup(1_700_000_000_000 + targets[i & 4095] * 2));
    }
    println!(
        "time index lookup          {:>10.1} ns  ({entries} entries)",
        t.elapsed().as_nanos() as f64 / n as f64
    );
}

/// fio sequential direct write, bs=1M, iodepth=8, io_uring, on `dir`. Returns MB/s.
fn fio_seq_write(dir: &Path, gib: u64) -> Option<f64> {
    let file = dir.join("fio-seq-write");
    let out = Command::new("fio")
        .args([
            "--name=seqwrite",
            &format!("--filename={}", file.display()),
            "--rw=write",
            "--bs=1M",
            "--direct=1",
            "--ioengine=io_uring",
            "--iodepth=8",
            &format!("--size={gib}G"),
            "--end_fsync=1",
            "--output-format=json",
        ])
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&file);
    if !out.status.success() {
        eprintln!("fio failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    // Avoid a JSON dependency: pick "bw_bytes" of the write section.
    let text = String::from_utf8_lossy(&out.stdout);
    let write = text.split("\"write\" : {").nth(1)?;
    let bw = write.split("\"bw_bytes\"").nth(1)?;
    let num: String = bw
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some(num.parse::<f64>().ok()? / MIB)
}

fn append_throughput(dir: PathBuf, gib: u64) -> f64 {
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            let pdir = dir.join("bench-0");
            let _ = std::fs::remove_dir_all(&pdir);
            let batch = one_mib_batch(1024);
            let total = gib << 30;
            let n = total / batch.len() as u64;
            let mut log = PartitionLog::open(&pdir, LogConfig::default())
                .await
                .unwrap();
            let t = Instant::now();
            for _ in 0..n {
                log.append(&batch).await.unwrap();
            }
            log.sync().await.unwrap();
            let secs = t.elapsed().as_secs_f64();
            log.close().await.unwrap();
            let _ = std::fs::remove_dir_all(&pdir);
            (n * batch.len() as u64) as f64 / MIB / secs
        })
        .unwrap()
        .join()
        .unwrap()
}

/// Latency of one small append + flush (the acks=1 path inside the engine, no network),
/// next to fio's 4 KiB O_DIRECT write latency at iodepth 1 would be the floor.
fn small_append_flush_latency(dir: PathBuf, n: usize) -> (u64, u64, u64) {
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            let pdir = dir.join("bench-lat-0");
            let _ = std::fs::remove_dir_all(&pdir);
            let value = vec![b'v'; 100];
            let batch = BatchBuilder::new(200)
                .record(RecordSpec::new(None, Some(&value)).timestamp(1))
                .build();
            let mut log = PartitionLog::open(&pdir, LogConfig::default())
                .await
                .unwrap();
            let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
            for i in 0..n {
                let t = Instant::now();
                log.append(&batch).await.unwrap();
                log.flush().await.unwrap();
                if i > n / 10 {
                    h.record(t.elapsed().as_micros().max(1) as u64).unwrap();
                }
            }
            log.close().await.unwrap();
            let _ = std::fs::remove_dir_all(&pdir);
            (
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.value_at_quantile(0.999),
            )
        })
        .unwrap()
        .join()
        .unwrap()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let dir = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    std::fs::create_dir_all(&dir).unwrap();
    let gib: u64 = std::env::var("SHARDLOG_BENCH_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1 } else { 4 });

    println!("== codec (1 MiB batches of 1 KiB records)");
    codec(quick);
    small_record_validation(quick);
    if std::env::args().any(|a| a == "codec") {
        return;
    }
    println!("== index lookups");
    index_lookups(quick);
    println!(
        "== append: one partition, 1 MiB batches, {gib} GiB, then fdatasync ({})",
        dir.display()
    );
    let (p50, p99, p999) =
        small_append_flush_latency(dir.clone(), if quick { 5_000 } else { 20_000 });
    println!("append 1 record + flush     p50 {p50} us  p99 {p99} us  p999 {p999} us  (acks=1 path, no network)");
    // Interleave fio and shardlog runs so drift in the (virtual) disk hits both alike.
    let rounds = if quick { 1 } else { 2 };
    let (mut fio_runs, mut ours_runs) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        if let Some(f) = fio_seq_write(&dir, gib) {
            fio_runs.push(f);
        }
        ours_runs.push(append_throughput(dir.clone(), gib));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let ours = mean(&ours_runs);
    println!("shardlog append            {ours:>10.0} MiB/s  runs {ours_runs:.0?}");
    if fio_runs.is_empty() {
        println!("fio not found: run scripts/bench.sh to install it and get the ratio");
    } else {
        let fio = mean(&fio_runs);
        println!("fio seq write (1M, qd8)    {fio:>10.0} MiB/s  runs {fio_runs:.0?}");
        println!("ratio shardlog / fio       {:>10.2}", ours / fio);
    }
}
