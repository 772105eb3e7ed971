//! `shardlog dump-log` on a known partition: Kafka's line formats, mismatch reports and the
//! trailing-garbage report, through the real binary.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::run;
use shardlog::format::{BatchBuilder, BatchHeader, RecordSpec};
use shardlog::log::PartitionLog;
use shardlog::LogConfig;

/// Writes a partition with three batches (the middle one keyed, with a header and a
/// tombstone) and returns its directory plus the three batches' CRCs.
fn known_partition(dir: &Path) -> Vec<u32> {
    let pdir = dir.join("orders-0");
    let pdir2 = pdir.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    run(move |_| async move {
        let config = LogConfig {
            index_interval_bytes: 1,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&pdir2, config).await.unwrap();
        let b1 = BatchBuilder::new(64)
            .record(RecordSpec::new(None, Some(b"hello")).timestamp(1_700_000_000_000))
            .build();
        let b2 = BatchBuilder::new(64)
            .record(
                RecordSpec::new(Some(b"k1"), Some(b"v1"))
                    .timestamp(1_700_000_000_100)
                    .header("trace", Some(b"abc")),
            )
            .record(RecordSpec::new(Some(b"k2"), None).timestamp(1_700_000_000_050))
            .build();
        let b3 = BatchBuilder::new(64)
            .record(RecordSpec::new(None, Some(b"bye")).timestamp(1_700_000_000_200))
            .build();
        for b in [&b1, &b2, &b3] {
            log.append(b).await.unwrap();
        }
        let mut crcs = Vec::new();
        for o in [0, 1, 3] {
            let data = log.read(o, 1).await.unwrap().to_bytes();
            crcs.push(BatchHeader::parse(&data).unwrap().crc);
        }
        log.close().await.unwrap();
        tx.send(crcs).unwrap();
    });
    let _ = pdir;
    rx.recv().unwrap()
}

fn dump(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("dump-log")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn path_str(p: PathBuf) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn dump_log_prints_kafka_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let crcs = known_partition(tmp.path());
    let pdir = tmp.path().join("orders-0");
    let log = path_str(pdir.join("00000000000000000000.log"));
    let (out, err) = dump(&["--files", &log, "--print-data-log"]);
    let expected = format!(
        "Dumping {log}\n\
Log starting offset: 0\n\
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 73 magic: 2 compresscodec: none crc: {} isvalid: true\n\
| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: hello\n\
baseOffset: 1 lastOffset: 2 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 73 CreateTime: 1700000000100 size: 91 magic: 2 compresscodec: none crc: {} isvalid: true\n\
| offset: 1 CreateTime: 1700000000100 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [trace] key: k1 payload: v1\n\
| offset: 2 CreateTime: 1700000000050 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k2\n\
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 164 CreateTime: 1700000000200 size: 71 magic: 2 compresscodec: none crc: {} isvalid: true\n\
| offset: 3 CreateTime: 1700000000200 keySize: -1 valueSize: 3 sequence: -1 headerKeys: [] payload: bye\n",
        crcs[0], crcs[1], crcs[2]
    );
    assert_eq!(out, expected);
    assert_eq!(err, "");

    // Without deep iteration: batch lines only.
    let (out, _) = dump(&["--files", &log]);
    assert_eq!(out.lines().count(), 2 + 3);

    // Records without their metadata; and a batch over --max-message-size is reported.
    let (out, _) = dump(&["--files", &log, "--skip-record-metadata"]);
    let records: Vec<&str> = out.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        records,
        vec![
            "| payload: hello",
            "| key: k1 payload: v1",
            "| key: k2",
            "| payload: bye"
        ]
    );
    let big = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["dump-log", "--files", &log, "--max-message-size", "80"])
        .output()
        .unwrap();
    assert!(!big.status.success());
    assert!(String::from_utf8_lossy(&big.stderr).contains("larger than --max-message-size 80"));

    // Indexes (index.interval.bytes = 1: entries for the 2nd and 3rd batches).
    let index = path_str(pdir.join("00000000000000000000.index"));
    let time = path_str(pdir.join("00000000000000000000.timeindex"));
    let (out, err) = dump(&["--files", &format!("{index},{time}")]);
    assert_eq!(
        out,
        format!(
            "Dumping {index}\noffset: 2 position: 73\noffset: 3 position: 164\n\
             Dumping {time}\ntimestamp: 1700000000100 offset: 2\ntimestamp: 1700000000200 offset: 3\n"
        )
    );
    assert_eq!(err, "");
    let (out, _) = dump(&["--files", &index, "--index-sanity-check"]);
    assert_eq!(
        out,
        format!("Dumping {index}\n{index} passed sanity check.\n")
    );
    let (out, err) = dump(&["--files", &format!("{index},{time}"), "--verify-index-only"]);
    assert_eq!(out, format!("Dumping {index}\nDumping {time}\n"));
    assert_eq!(err, "");
}

#[test]
fn dump_log_reports_garbage_and_mismatches() {
    let tmp = tempfile::tempdir().unwrap();
    known_partition(tmp.path());
    let pdir = tmp.path().join("orders-0");
    let log = pdir.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(&[0u8; 21]);
    std::fs::write(&log, &bytes).unwrap();
    let (out, _) = dump(&["--files", &path_str(log.clone())]);
    assert!(
        out.ends_with("Found 21 invalid bytes at the end of 00000000000000000000.log\n"),
        "{out}"
    );

    // An index entry pointing at the wrong batch, and a time entry with a wrong timestamp.
    let index = pdir.join("00000000000000000000.index");
    let mut idx = std::fs::read(&index).unwrap();
    idx[3] = 3; // relative offset 2 -> 3 for the entry at position 73
    std::fs::write(&index, &idx).unwrap();
    let (_, err) = dump(&["--files", &path_str(index.clone())]);
    let abs = std::path::absolute(&index).unwrap();
    assert_eq!(
        err,
        format!(
            "Mismatches in :{}\n  Index offset: 3, log offset: 2\n",
            abs.display()
        )
    );
    let verify = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["dump-log", "--verify-index-only", "--files"])
        .arg(&abs)
        .output()
        .unwrap();
    assert!(
        !verify.status.success(),
        "an index that disagrees with its log fails"
    );
    let time = pdir.join("00000000000000000000.timeindex");
    let mut ti = std::fs::read(&time).unwrap();
    ti[7] ^= 1;
    std::fs::write(&time, &ti).unwrap();
    let (_, err) = dump(&["--files", &path_str(time.clone())]);
    assert!(
        err.starts_with(&format!(
            "Found timestamp mismatch in :{}\n  Index timestamp: 1700000000101, log timestamp: 1700000000100\n",
            std::path::absolute(&time).unwrap().display()
        )),
        "{err}"
    );
}

#[test]
fn dump_log_refuses_a_fifo_instead_of_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("00000000000000000000.log");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["dump-log", "--files"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_failed_index_sanity_check_exits_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    known_partition(tmp.path());
    let index = tmp
        .path()
        .join("orders-0")
        .join("00000000000000000000.index");
    // Offsets going backwards: entry (3, 164) then (2, 73).
    let mut bytes = Vec::new();
    for (rel, pos) in [(3i32, 164i32), (2, 73)] {
        bytes.extend_from_slice(&rel.to_be_bytes());
        bytes.extend_from_slice(&pos.to_be_bytes());
    }
    std::fs::write(&index, &bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["dump-log", "--index-sanity-check", "--files"])
        .arg(&index)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("failed sanity check"), "{err}");
}

/// `| head`: a reader that goes away stops the tool quietly with success, not with
/// "Broken pipe" on stderr and exit 1.
#[test]
fn a_closed_pipe_stops_dump_log_quietly() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let pdir = tmp.path().join("big-0");
    let pdir2 = pdir.clone();
    run(move |_| async move {
        let mut log = PartitionLog::open(&pdir2, LogConfig::default())
            .await
            .unwrap();
        for i in 0..3000 {
            let value = format!("value {i} {}", "x".repeat(200));
            let b = BatchBuilder::new(256)
                .record(RecordSpec::new(None, Some(value.as_bytes())).timestamp(i))
                .build();
            log.append(&b).await.unwrap();
        }
        log.close().await.unwrap();
    });
    let file = path_str(pdir.join("00000000000000000000.log"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["dump-log", "--files", &file, "--print-data-log"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe's read end is closed here (dropped), as `head` does after its lines.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(out.status.success(), "{:?} {stderr}", out.status);
}
