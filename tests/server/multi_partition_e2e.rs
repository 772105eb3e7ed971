//! MultiProduce and MultiFetch through a real 2-shard server on loopback: one request for
//! partitions on both shards, per-partition errors beside successes, bad requests refused
//! whole with nothing written, the reply bounded by max_bytes, one mesh hop per request.

use crate::common;

use bytes::Bytes;
use common::*;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::multi::{FetchEntry, ProduceEntry};
use shardlog::protocol::{ErrorCode, ACKS_ALL, ACKS_LEADER};

fn batch(tag: &str, n: usize) -> Bytes {
    let values: Vec<String> = (0..n).map(|i| format!("{tag}-{i}")).collect();
    let mut b = BatchBuilder::new(4096);
    for v in &values {
        b.push(RecordSpec::new(None, Some(v.as_bytes())));
    }
    Bytes::from(b.build())
}

fn produce_entry(topic: &str, partition: i32, records: Bytes) -> ProduceEntry {
    ProduceEntry {
        topic: topic.into(),
        partition,
        records,
    }
}

fn fetch_entry(partition: i32, offset: i64, max_bytes: i32) -> FetchEntry {
    FetchEntry {
        topic: "m".into(),
        partition,
        offset,
        max_bytes,
    }
}

#[test]
fn multi_partition_produce_and_fetch_span_shards_in_one_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |_| {});
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        c.create_topic("m", 6, vec![]).await.unwrap();
        let owners: Vec<i32> = c
            .metadata(Some(vec!["m".into()]))
            .await
            .unwrap()
            .topic("m")
            .unwrap()
            .partitions
            .iter()
            .map(|p| p.owner_shard)
            .collect();
        assert!(owners.contains(&0) && owners.contains(&1));

        // Two rounds to every partition: offsets per partition, in request order.
        for round in 0..2i64 {
            let entries = (0..6)
                .map(|p| produce_entry("m", p, batch(&format!("r{round}p{p}"), 3)))
                .collect();
            let before = c.metrics().await.unwrap();
            let out = c.multi_produce(ACKS_ALL, entries).await.unwrap();
            let delta = c.metrics().await.unwrap().since(&before);
            assert_eq!(out.len(), 6);
            for (p, r) in out.iter().enumerate() {
                assert_eq!((r.topic.as_str(), r.partition), ("m", p as i32));
                assert_eq!(r.error, None);
                assert_eq!((r.base_offset, r.last_offset), (round * 3, round * 3 + 2));
            }
            // One hop to the other shard for its partitions, not one per partition.
            let hops = delta
                .distribution("stage.mesh_round_trip")
                .unwrap()
                .count_recorded();
            assert_eq!(hops, 1);
        }

        // Per-partition errors beside successes.
        let mut bad_crc = batch("x", 2).to_vec();
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 0xff;
        let entries = vec![
            produce_entry("m", 0, batch("ok", 1)),
            produce_entry("m", 99, batch("no", 1)),
            produce_entry("nope", 0, batch("no", 1)),
            produce_entry("m", 1, Bytes::from(bad_crc)),
        ];
        let out = c.multi_produce(ACKS_LEADER, entries).await.unwrap();
        let codes: Vec<Option<ErrorCode>> =
            out.iter().map(|r| r.error.as_ref().map(|e| e.0)).collect();
        assert_eq!(
            codes,
            vec![
                None,
                Some(ErrorCode::UnknownPartition),
                Some(ErrorCode::UnknownTopic),
                Some(ErrorCode::CorruptBatch)
            ]
        );
        assert_eq!(out[0].base_offset, 6);

        // Refused whole, nothing written: a partition named twice, too many, bad acks.
        let twice = vec![
            produce_entry("m", 2, batch("a", 1)),
            produce_entry("m", 2, batch("b", 1)),
        ];
        let err = c.multi_produce(ACKS_LEADER, twice).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidRequest));
        let many = (0..1001)
            .map(|p| produce_entry("m", p, Bytes::new()))
            .collect();
        let err = c.multi_produce(ACKS_LEADER, many).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidRequest));
        let err = c
            .multi_produce(7, vec![produce_entry("m", 2, batch("a", 1))])
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidAcks));
        assert_eq!(c.list_offsets("m", 2, -1).await.unwrap(), Some((6, -1)));

        // Fetch all six at once: each partition as a single Fetch gives it.
        let all = c
            .multi_fetch(
                1 << 20,
                (0..6).map(|p| fetch_entry(p, 0, 1 << 20)).collect(),
            )
            .await
            .unwrap();
        for (p, f) in all.iter().enumerate() {
            assert_eq!(f.error, None, "partition {p}");
            let single = c.fetch("m", p as i32, 0, 1 << 20).await.unwrap();
            assert_eq!(f.records.to_bytes(), single.records, "partition {p}");
            assert_eq!(f.log_end_offset, single.log_end_offset);
        }

        // A small max_bytes: the first partition gets one batch even if larger than its
        // shard's share; the rest are strict (a batch larger than what is left is not
        // sent), and a partition left with nothing on its shard is not read.
        let one_batch = c.fetch("m", 3, 0, 1).await.unwrap().records.len() as i32;
        let small = c
            .multi_fetch(
                one_batch + 10,
                (0..6).map(|p| fetch_entry(p, 0, 1 << 20)).collect(),
            )
            .await
            .unwrap();
        assert_eq!(small[0].records.len(), one_batch as usize);
        for (p, f) in small.iter().enumerate().skip(1) {
            assert_eq!(f.error, None);
            assert!(f.records.is_empty(), "partition {p} is strict");
            if owners[p] == owners[0] {
                assert_eq!(
                    f.log_end_offset, -1,
                    "partition {p} not read: no share left"
                );
            } else {
                assert_eq!(
                    f.log_end_offset, 6,
                    "partition {p} read, its batch too large"
                );
            }
        }

        // Per-partition errors on fetch; a non-positive share is refused whole.
        let mixed = c
            .multi_fetch(
                1 << 20,
                vec![
                    fetch_entry(0, 999, 1024),
                    fetch_entry(1, 0, 1024),
                    fetch_entry(42, 0, 1024),
                ],
            )
            .await
            .unwrap();
        let codes: Vec<Option<ErrorCode>> = mixed
            .iter()
            .map(|r| r.error.as_ref().map(|e| e.0))
            .collect();
        assert_eq!(
            codes,
            vec![
                Some(ErrorCode::OffsetOutOfRange),
                None,
                Some(ErrorCode::UnknownPartition)
            ]
        );
        let err = c
            .multi_fetch(1 << 20, vec![fetch_entry(0, 0, 0)])
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidRequest));
    });
    server.stop().unwrap();
}
