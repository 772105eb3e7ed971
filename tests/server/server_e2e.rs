//! End to end: real shard executors on real files, real TCP on loopback, the real client.

use crate::common;

use std::collections::HashMap;

use bytes::Bytes;
use common::*;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{
    ApiKey, ErrorCode, Request, ResponseBody, WireWriter, ACKS_ALL, ACKS_LEADER, ACKS_NONE,
};

fn batch_of(values: &[String], ts: i64) -> Bytes {
    let mut b = BatchBuilder::new(256);
    for v in values {
        b.push(RecordSpec::new(None, Some(v.as_bytes())).timestamp(ts));
    }
    Bytes::from(b.build())
}

/// 8 partitions on 2 shards, 6 connections at once: 2 on the shared port, 2 on shard 0's
/// port, 2 on shard 1's port, so half the requests are forwarded and half go direct.
#[test]
fn concurrent_produce_and_ordered_consume_across_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |_| {});
    client(move || async move {
        let shared = format!("127.0.0.1:{port}");
        let mut admin = Client::connect(&shared).await.unwrap();
        admin.create_topic("orders", 8, vec![]).await.unwrap();
        let md = admin.metadata(Some(vec!["orders".into()])).await.unwrap();
        let owners: Vec<i32> = md
            .topic("orders")
            .unwrap()
            .partitions
            .iter()
            .map(|p| p.owner_shard)
            .collect();
        assert!(owners.contains(&0) && owners.contains(&1));
        let addrs = [
            shared.clone(),
            shared.clone(),
            format!("127.0.0.1:{}", md.shard_port(0).unwrap()),
            format!("127.0.0.1:{}", md.shard_port(0).unwrap()),
            format!("127.0.0.1:{}", md.shard_port(1).unwrap()),
            format!("127.0.0.1:{}", md.shard_port(1).unwrap()),
        ];
        let mut tasks = Vec::new();
        for (conn, addr) in addrs.into_iter().enumerate() {
            tasks.push(glommio::spawn_local(async move {
                let mut c = Client::connect(&addr).await.unwrap();
                let mut sent: HashMap<i32, Vec<String>> = HashMap::new();
                for round in 0..25 {
                    for p in 0..8 {
                        let values: Vec<String> = (0..3)
                            .map(|i| format!("c{conn}-r{round}-p{p}-{i}"))
                            .collect();
                        let acks = if round % 2 == 0 {
                            ACKS_LEADER
                        } else {
                            ACKS_ALL
                        };
                        let (base, last, _) = c
                            .produce("orders", p, acks, batch_of(&values, 1_000 + round))
                            .await
                            .unwrap()
                            .unwrap();
                        assert_eq!(last - base, 2);
                        sent.entry(p).or_default().extend(values);
                    }
                }
                sent
            }));
        }
        let mut expected: HashMap<i32, Vec<String>> = HashMap::new();
        for t in tasks {
            for (p, v) in t.await {
                expected.entry(p).or_default().extend(v);
            }
        }
        for p in 0..8 {
            let got = read_records(&mut admin, "orders", p).await;
            // Offsets contiguous from 0.
            for (i, (o, _)) in got.iter().enumerate() {
                assert_eq!(*o, i as i64, "partition {p}");
            }
            // Everything sent is there exactly once, and each connection's records keep
            // their order.
            let mut got_values: Vec<String> = got.into_iter().map(|(_, v)| v).collect();
            for conn in 0..6 {
                let prefix = format!("c{conn}-");
                let mine: Vec<&String> = got_values
                    .iter()
                    .filter(|v| v.starts_with(&prefix))
                    .collect();
                let sent_mine: Vec<&String> = expected[&p]
                    .iter()
                    .filter(|v| v.starts_with(&prefix))
                    .collect();
                assert_eq!(mine, sent_mine, "partition {p} connection {conn}");
            }
            got_values.sort();
            let mut want = expected[&p].clone();
            want.sort();
            assert_eq!(got_values, want);
        }
    });
    server.stop().unwrap();
}

/// Many requests written before any reply is read: replies come back in request order.
#[test]
fn pipelined_requests_keep_reply_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |_| {});
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        c.create_topic("p", 2, vec![]).await.unwrap();
        let before = c.metrics().await.unwrap();
        let mut cids = Vec::new();
        for i in 0..200 {
            let req = Request::Produce {
                topic: "p".into(),
                partition: i % 2,
                acks: ACKS_LEADER,
                records: batch_of(&[format!("v{i}")], i as i64),
            };
            cids.push(c.send(&req).await.unwrap());
        }
        let mut next = [0i64; 2];
        for (i, cid) in cids.into_iter().enumerate() {
            let resp = c.recv(ApiKey::Produce).await.unwrap();
            assert_eq!(resp.correlation_id, cid);
            match resp.result.unwrap() {
                ResponseBody::Produce { base_offset, .. } => {
                    assert_eq!(base_offset, next[i % 2]);
                    next[i % 2] += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        // Replies finished together went out together (group commits answer several).
        let writes = c
            .metrics()
            .await
            .unwrap()
            .since(&before)
            .value("reply_writes");
        let writes = writes.expect("the server counts its reply writes");
        assert!(
            (1..=150).contains(&writes),
            "{writes} writes for 200 replies"
        );
        // acks=0: no reply; the record becomes visible once the partition has written it.
        c.produce("p", 0, ACKS_NONE, batch_of(&["quiet".into()], 5))
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while c.list_offsets("p", 0, -1).await.unwrap() != Some((101, -1)) {
            assert!(
                std::time::Instant::now() < deadline,
                "acks=0 record never became visible"
            );
            glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    server.stop().unwrap();
}

async fn expect_code(c: &mut Client, req: Request, code: ErrorCode) {
    match c.call(&req).await {
        Err(e) => assert_eq!(e.code(), Some(code), "{req:?}: {e}"),
        Ok(body) => panic!("{req:?} should fail with {code}, got {body:?}"),
    }
}

fn raw_frame(api_key: i16, version: i16, cid: i32, body: &[u8]) -> Vec<u8> {
    let mut w = WireWriter::new();
    w.i16(api_key).i16(version).i32(cid);
    w.buf.extend_from_slice(body);
    w.into_frame()
}

#[test]
fn bad_inputs_get_distinct_errors_and_the_server_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |c| c.max_frame_bytes = 64 * 1024);
    client(move || async move {
        let addr = format!("127.0.0.1:{port}");
        let mut good = Client::connect(&addr).await.unwrap();
        good.create_topic("t", 2, vec![("segment.bytes".into(), "4096".into())])
            .await
            .unwrap();
        good.produce("t", 1, ACKS_LEADER, batch_of(&["first".into()], 1))
            .await
            .unwrap();

        let mut c = Client::connect(&addr).await.unwrap();
        // Unknown api key and version.
        c.send_raw(&raw_frame(99, 0, 7, &[])).await.unwrap();
        let r = c.recv(ApiKey::ApiVersions).await.unwrap();
        assert_eq!(r.correlation_id, 7);
        assert_eq!(r.result.unwrap_err().0, ErrorCode::UnsupportedApiKey);
        c.send_raw(&raw_frame(ApiKey::Metadata as i16, 9, 8, &[]))
            .await
            .unwrap();
        assert_eq!(
            c.recv(ApiKey::Metadata)
                .await
                .unwrap()
                .result
                .unwrap_err()
                .0,
            ErrorCode::UnsupportedVersion
        );
        // Malformed body: a produce cut short.
        c.send_raw(&raw_frame(ApiKey::Produce as i16, 0, 9, &[0, 1, b't', 0]))
            .await
            .unwrap();
        assert_eq!(
            c.recv(ApiKey::Produce).await.unwrap().result.unwrap_err().0,
            ErrorCode::MalformedRequest
        );
        // Unknown topic / partition.
        let fetch = |topic: &str, partition, offset| Request::Fetch {
            topic: topic.into(),
            partition,
            offset,
            max_bytes: 1024,
        };
        expect_code(&mut c, fetch("nope", 0, 0), ErrorCode::UnknownTopic).await;
        expect_code(&mut c, fetch("t", 2, 0), ErrorCode::UnknownPartition).await;
        expect_code(&mut c, fetch("t", -1, 0), ErrorCode::UnknownPartition).await;
        expect_code(&mut c, fetch("t", 1, 5), ErrorCode::OffsetOutOfRange).await;
        expect_code(
            &mut c,
            Request::Fetch {
                topic: "t".into(),
                partition: 1,
                offset: 0,
                max_bytes: 0,
            },
            ErrorCode::InvalidRequest,
        )
        .await;
        // Corrupt batch (CRC), wrong magic, bad acks, too large for segment.bytes.
        let produce = |records: Bytes, acks| Request::Produce {
            topic: "t".into(),
            partition: 1,
            acks,
            records,
        };
        let mut corrupt = batch_of(&["x".into()], 1).to_vec();
        let n = corrupt.len();
        corrupt[n - 1] ^= 0x55;
        expect_code(
            &mut c,
            produce(Bytes::from(corrupt), ACKS_LEADER),
            ErrorCode::CorruptBatch,
        )
        .await;
        let mut magic = batch_of(&["x".into()], 1).to_vec();
        magic[16] = 1;
        expect_code(
            &mut c,
            produce(Bytes::from(magic), ACKS_LEADER),
            ErrorCode::InvalidMagic,
        )
        .await;
        expect_code(
            &mut c,
            produce(Bytes::from_static(b"garbage"), ACKS_LEADER),
            ErrorCode::InvalidBatch,
        )
        .await;
        expect_code(
            &mut c,
            produce(batch_of(&["x".into()], 1), 2),
            ErrorCode::InvalidAcks,
        )
        .await;
        expect_code(
            &mut c,
            produce(batch_of(&["y".repeat(5000)], 1), ACKS_LEADER),
            ErrorCode::BatchTooLarge,
        )
        .await;
        // Topic admin mistakes.
        let create =
            |name: &str, partitions, configs: Vec<(String, String)>| Request::CreateTopic {
                name: name.into(),
                partitions,
                configs,
            };
        expect_code(
            &mut c,
            create("../etc", 1, vec![]),
            ErrorCode::InvalidTopicName,
        )
        .await;
        expect_code(
            &mut c,
            create("t", 1, vec![]),
            ErrorCode::TopicAlreadyExists,
        )
        .await;
        expect_code(&mut c, create("u", 0, vec![]), ErrorCode::InvalidRequest).await;
        expect_code(
            &mut c,
            create("u", 1, vec![("segment.bytes".into(), "-1".into())]),
            ErrorCode::InvalidConfig,
        )
        .await;
        expect_code(
            &mut c,
            Request::DeleteTopic {
                name: "nope".into(),
            },
            ErrorCode::UnknownTopic,
        )
        .await;
        expect_code(
            &mut c,
            Request::ListOffsets {
                topic: "t".into(),
                partition: 1,
                timestamp: -7,
            },
            ErrorCode::InvalidTimestamp,
        )
        .await;
        // Nothing rejected was stored.
        assert_eq!(good.list_offsets("t", 1, -1).await.unwrap(), Some((1, -1)));

        // A frame over the limit: refused with its correlation id, connection closed.
        let mut big = Client::connect(&addr).await.unwrap();
        let mut frame = (1i32 << 20).to_be_bytes().to_vec();
        frame.extend_from_slice(&raw_frame(ApiKey::Produce as i16, 0, 77, &[])[4..]);
        big.send_raw(&frame).await.unwrap();
        let r = big.recv(ApiKey::Produce).await.unwrap();
        assert_eq!(r.correlation_id, 77);
        assert_eq!(r.result.unwrap_err().0, ErrorCode::FrameTooLarge);
        assert!(
            big.recv(ApiKey::Produce).await.is_err(),
            "connection is closed"
        );
        // A frame too short for a header.
        let mut short = Client::connect(&addr).await.unwrap();
        short.send_raw(&3i32.to_be_bytes()).await.unwrap();
        assert_eq!(
            short
                .recv(ApiKey::ApiVersions)
                .await
                .unwrap()
                .result
                .unwrap_err()
                .0,
            ErrorCode::MalformedRequest
        );
        // A client that disconnects mid-frame.
        let mut gone = Client::connect(&addr).await.unwrap();
        gone.send_raw(&1000i32.to_be_bytes()).await.unwrap();
        gone.send_raw(&[0u8; 10]).await.unwrap();
        drop(gone);

        // The good client is still served, and so is the one that sent bad requests.
        let (base, _, _) = good
            .produce("t", 1, ACKS_ALL, batch_of(&["second".into()], 2))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(base, 1);
        let values: Vec<String> = read_records(&mut c, "t", 1)
            .await
            .into_iter()
            .map(|x| x.1)
            .collect();
        assert_eq!(values, vec!["first", "second"]);
    });
    server.stop().unwrap();
}

#[test]
fn clean_shutdown_and_restart_keep_data_and_owners() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let (server, port) = start_server(&dir, 2, |_| {});
    let before = client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        c.create_topic("keep", 4, vec![("segment.bytes".into(), "2000".into())])
            .await
            .unwrap();
        for i in 0..40 {
            c.produce(
                "keep",
                i % 4,
                ACKS_LEADER,
                batch_of(&[format!("v{i}"), "x".repeat(400)], i as i64),
            )
            .await
            .unwrap();
        }
        let md = c.metadata(Some(vec!["keep".into()])).await.unwrap();
        let mut data = Vec::new();
        for p in 0..4 {
            data.push(read_records(&mut c, "keep", p).await);
        }
        (md.topic("keep").unwrap().partitions.clone(), data)
    });
    server.stop().unwrap();
    assert!(dir.join(shardlog::server::CLEAN_SHUTDOWN_FILE).exists());
    // Sealed segments exist (segment.bytes 2000), so restart exercises multi-segment reopen.
    assert!(std::fs::read_dir(dir.join("keep-0")).unwrap().count() > 3);

    let (server, port) = start_server(&dir, 2, |_| {});
    assert!(server.previous_shutdown_was_clean);
    assert!(!dir.join(shardlog::server::CLEAN_SHUTDOWN_FILE).exists());
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        let md = c.metadata(Some(vec!["keep".into()])).await.unwrap();
        assert_eq!(md.topic("keep").unwrap().partitions, before.0);
        for p in 0..4 {
            assert_eq!(read_records(&mut c, "keep", p).await, before.1[p as usize]);
        }
        let (base, _, _) = c
            .produce("keep", 0, ACKS_ALL, batch_of(&["after".into()], 99))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(base, before.1[0].len() as i64);
        // Delete removes the data and the metadata.
        c.delete_topic("keep").await.unwrap();
        assert_eq!(
            c.metadata(Some(vec!["keep".into()])).await.unwrap().topics[0].error_code,
            ErrorCode::UnknownTopic
        );
    });
    server.stop().unwrap();
    assert!(!dir.join("keep-0").exists());
}

/// FetchAtTime answers exactly what ListOffsets then Fetch answer, for every kind of
/// target (before, inside, between and after the records; the sentinels), across several
/// segments and through a forwarding shard.
#[test]
fn fetch_at_time_is_list_offsets_then_fetch_in_one_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |_| {});
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        let small = vec![("segment.bytes".to_string(), "2048".to_string())];
        c.create_topic("t", 2, small).await.unwrap();
        for p in 0..2 {
            for i in 0..40i64 {
                // Timestamps 1000, 1010, ... with a step back now and then.
                let ts = 1_000 + i * 10 - if i % 7 == 3 { 25 } else { 0 };
                let values: Vec<String> = (0..3).map(|k| format!("p{p}-{i}-{k}")).collect();
                c.produce("t", p, ACKS_LEADER, batch_of(&values, ts))
                    .await
                    .unwrap();
            }
        }
        let targets = [
            0, 999, 1_000, 1_001, 1_095, 1_200, 1_390, 1_391, 5_000, -1, -2, -3,
        ];
        for p in 0..2 {
            for &ts in &targets {
                let expected = c.list_offsets("t", p, ts).await.unwrap();
                let (found, f) = c.fetch_at_time("t", p, ts, 1).await.unwrap();
                let found_offset = found.map(|x| x.0);
                match expected {
                    Some((o, t)) if o >= 0 => {
                        assert_eq!(found, Some((o, t)), "partition {p} at {ts}");
                        let want = c.fetch("t", p, o, 1).await.unwrap();
                        assert_eq!(f.records, want.records, "partition {p} at {ts}");
                        assert_eq!(f.log_end_offset, want.log_end_offset);
                    }
                    _ => {
                        assert_eq!(found_offset, None, "partition {p} at {ts}");
                        assert!(f.records.is_empty());
                    }
                }
            }
        }
        let err = c.fetch_at_time("t", 7, 0, 1).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::UnknownPartition));
        let err = c.fetch_at_time("t", 0, 0, 0).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidRequest));
    });
    server.stop().unwrap();
}

/// A Fetch reply of many MiB, made of thousands of cached extents: more slices than one
/// sendmsg takes and more bytes than the socket buffer holds, so the vectored write is
/// completed by the stream's own writes. It must arrive whole and in order. Each acks=1
/// produce of a 4 KiB batch flushes and caches the page or two it completed as an extent
/// of its own, so 2500 of them leave about 2500 extents for one fetch to send.
#[test]
fn a_reply_of_thousands_of_cached_extents_arrives_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 1, |c| c.cache_bytes = 64 << 20);
    client(move || async move {
        let mut c = Client::connect(&format!("127.0.0.1:{port}")).await.unwrap();
        c.create_topic("big", 1, vec![]).await.unwrap();
        let mut sent = Vec::new();
        for i in 0..2500 {
            let value = vec![b'a' + (i % 26) as u8; 4000];
            let b = Bytes::from(
                BatchBuilder::new(8 * 1024)
                    .record(RecordSpec::new(None, Some(&value)))
                    .build(),
            );
            c.produce("big", 0, ACKS_LEADER, b.clone()).await.unwrap();
            sent.push(b);
        }
        // Warm: the pages are cached (written pages and one read), then one fetch.
        let _ = c.fetch("big", 0, 0, 16 << 20).await.unwrap();
        let f = c.fetch("big", 0, 0, 16 << 20).await.unwrap();
        assert_eq!(f.records.len(), sent.iter().map(Bytes::len).sum::<usize>());
        let mut at = 0;
        for (i, b) in sent.iter().enumerate() {
            let got = &f.records[at..at + b.len()];
            // Same records; base offset and leader epoch are the server's.
            assert_eq!(&got[61..], &b[61..], "batch {i}");
            shardlog::format::batch::check_framing_and_crc(got).unwrap();
            at += b.len();
        }
    });
    server.stop().unwrap();
}

/// A large frame's body is read with the socket's receive low-water mark at what it still
/// lacks: a body that arrives in pieces with pauses between them, down to its last byte
/// alone, is still read whole and answered, and the connection goes on with small requests
/// and a large frame sent at once.
#[test]
fn a_large_frame_sent_in_pieces_is_read_whole_and_the_connection_goes_on() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 1, |_| {});
    let addr = format!("127.0.0.1:{port}");
    let admin = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&admin).await.unwrap();
        c.create_topic("big", 1, vec![]).await.unwrap();
    });
    let value = vec![b'v'; 300 << 10];
    let produce = |cid| {
        Request::Produce {
            topic: "big".into(),
            partition: 0,
            acks: ACKS_LEADER,
            records: Bytes::from(
                BatchBuilder::new(value.len() + 128)
                    .record(RecordSpec::new(None, Some(&value)))
                    .build(),
            ),
        }
        .encode_frame(cid)
    };
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let frame = produce(1);
    let cuts = [0, 4, 100, frame.len() / 3, frame.len() - 1, frame.len()];
    for piece in cuts.windows(2) {
        s.write_all(&frame[piece[0]..piece[1]]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    let r = read_response(&mut s, ApiKey::Produce).unwrap();
    assert_eq!(r.correlation_id, 1);
    assert!(
        matches!(r.result, Ok(ResponseBody::Produce { base_offset: 0, .. })),
        "{:?}",
        r.result.err()
    );
    s.write_all(&Request::Metadata { topics: None }.encode_frame(2))
        .unwrap();
    assert_eq!(
        read_response(&mut s, ApiKey::Metadata)
            .unwrap()
            .correlation_id,
        2
    );
    s.write_all(&produce(3)).unwrap();
    let r = read_response(&mut s, ApiKey::Produce).unwrap();
    assert_eq!(r.correlation_id, 3);
    assert!(matches!(
        r.result,
        Ok(ResponseBody::Produce { base_offset: 1, .. })
    ));
    server.stop().unwrap();
}
