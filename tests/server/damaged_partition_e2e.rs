//! Issue 39: a node never crash-loops on state it cannot load, and recovery says what it
//! did in proportion. A partition whose files cannot be opened at the start is left offline
//! (named in an ERROR with the reason; its requests get KAFKA_STORAGE_ERROR) while the rest
//! of the node serves; the zero padding an unclean stop leaves behind is reported once per
//! shard at INFO, not as a WARN per partition that reads like data loss.

use crate::common;

use common::server_proc::ServerProc;
use shardlog::client::{Client, ClientError};
use shardlog::protocol::ErrorCode;

fn produce_one(addr: &str, topic: &'static str, partition: i32) -> Result<(), ClientError> {
    let addr = addr.to_string();
    common::client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let records = common::single(1_700_000_000_000, 77);
        c.produce(topic, partition, -1, records.into())
            .await
            .map(|_| ())
    })
}

/// A server with `topic` of `partitions` partitions, one record in each.
fn server_with_records(
    data: &std::path::Path,
    topic: &'static str,
    partitions: i32,
) -> (ServerProc, String) {
    let server = ServerProc::start(data, 2, &[]);
    let addr = server.addr();
    let a = addr.clone();
    common::client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic(topic, partitions, vec![]).await.unwrap();
    });
    for p in 0..partitions {
        produce_one(&addr, topic, p).unwrap();
    }
    (server, addr)
}

#[test]
fn a_partition_that_cannot_be_opened_is_left_offline_and_the_rest_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (mut server, addr) = server_with_records(&data, "dmg", 4);
    server.kill9();
    // Partition 0's log can no longer be opened at all.
    let log = data.join("dmg-0/00000000000000000000.log");
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    server.respawn();
    let text = server.log_text();
    assert!(
        text.lines()
            .any(|l| l.contains("ERROR") && l.contains("dmg-0") && l.contains("offline")),
        "the offline partition is named:\n{text}"
    );
    for p in 1..4 {
        produce_one(&addr, "dmg", p).unwrap_or_else(|e| panic!("dmg-{p}: {e}\n{text}"));
    }
    let refused = produce_one(&addr, "dmg", 0).unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::StorageError), "{refused}");
    assert!(refused.to_string().contains("offline"), "{refused}");
    assert!(server.is_running());
}

#[test]
fn zero_padding_after_a_kill_is_one_info_per_shard_not_a_warning_per_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut server, addr) = server_with_records(&tmp.path().join("data"), "pad", 6);
    server.restart_after_kill();
    let text = server.log_text();
    let after_restart = &text[text.rfind("file descriptor budget").unwrap_or(0)..];
    assert!(
        !after_restart.contains("truncated a log"),
        "zero padding is no warning:\n{after_restart}"
    );
    let infos = after_restart
        .lines()
        .filter(|l| l.contains("INFO") && l.contains("zero padding"))
        .count();
    assert!(
        (1..=2).contains(&infos),
        "one INFO per shard with totals:\n{after_restart}"
    );
    for p in 0..6 {
        produce_one(&addr, "pad", p).unwrap();
    }
}
