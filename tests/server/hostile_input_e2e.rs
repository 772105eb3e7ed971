//! The smaller integrity rules, end to end on a real server: producers cannot write
//! control or transactional batches, batch errors name their byte, wildcard listens
//! advertise a reachable host, and the host's page cache is not any local user's to drop.

use crate::common;

use bytes::Bytes;
use common::*;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{ErrorCode, ACKS_ALL};

fn one_record() -> Vec<u8> {
    BatchBuilder::new(128)
        .record(RecordSpec::new(None, Some(b"v")).timestamp(1_700_000_000_000))
        .build()
}

/// Sets attribute bits on a batch and fixes its CRC (the CRC covers attributes onwards).
fn with_attributes(mut batch: Vec<u8>, bits: i16) -> Vec<u8> {
    let attrs = i16::from_be_bytes([batch[21], batch[22]]) | bits;
    batch[21..23].copy_from_slice(&attrs.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

#[test]
fn producers_cannot_write_reserved_batches_and_errors_name_the_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 1, |_| {});
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        c.create_topic("t", 1, vec![]).await.unwrap();
        for (bits, what) in [
            (0x10, "transactional"),
            (0x20, "control"),
            (0x40, "delete-horizon"),
        ] {
            let b = Bytes::from(with_attributes(one_record(), bits));
            let e = c.produce("t", 0, ACKS_ALL, b).await.unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::InvalidBatch), "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
        // A good batch, then a truncated one: the error points at the second.
        let good = one_record();
        let mut two = good.clone();
        two.extend_from_slice(&good[..good.len() - 3]);
        let e = c
            .produce("t", 0, ACKS_ALL, Bytes::from(two))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains(&format!("at byte {}", good.len())),
            "{e}"
        );
        assert_eq!(c.list_offsets("t", 0, -1).await.unwrap(), Some((0, -1)));
    });
    server.stop().unwrap();
}

#[test]
fn wildcard_listen_advertises_the_address_clients_reach() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 1, |c| {
        c.listen = std::net::SocketAddr::new([0, 0, 0, 0].into(), c.listen.port());
        // An unencrypted listener off loopback: the operator has to mean it.
        c.allow_insecure_listeners = true;
    });
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        let md = c.metadata(None).await.unwrap();
        assert!(
            md.shards.iter().all(|s| s.host == "127.0.0.1"),
            "{:?}",
            md.shards
        );
    });
    server.stop().unwrap();
}

#[test]
fn dropping_the_hosts_page_cache_needs_the_server_to_allow_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 1, |_| {});
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        let e = c.drop_caches(true).await.unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::AdminNotAllowed), "{e}");
        assert!(e.to_string().contains("allow.drop.kernel.cache"), "{e}");
        c.drop_caches(false).await.unwrap();
    });
    server.stop().unwrap();
}
