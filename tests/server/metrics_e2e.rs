//! The server's metrics through the real `shardlog serve` binary on loopback: the native
//! Metrics API (whole histograms, subtracted between two answers) and the Prometheus
//! endpoint (`metrics.listen`), including what it does with bad requests.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use common::client;
use common::server_proc::ServerProc;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{ACKS_ALL, ACKS_LEADER};

fn batch(n: usize) -> Bytes {
    let mut b = BatchBuilder::new(4096);
    let values: Vec<String> = (0..n).map(|i| format!("value {i}")).collect();
    for v in &values {
        b.push(RecordSpec::new(None, Some(v.as_bytes())));
    }
    Bytes::from(b.build())
}

/// One HTTP exchange; returns (status line, body).
fn http(addr: &str, request: &[u8]) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// Sum of the samples of `metric` whose labels contain every one of `labels`.
fn sample_sum(text: &str, metric: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[test]
fn metrics_api_and_prometheus_endpoint_count_what_happened() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("metrics.listen", "auto")]);
    let addr = server.addr();
    let a = addr.clone();
    let (delta, produced) = client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("m", 2, vec![]).await.unwrap();
        let before = c.metrics().await.unwrap();
        let mut produced = 0;
        for p in 0..2 {
            for acks in [ACKS_LEADER, ACKS_ALL] {
                c.produce("m", p, acks, batch(5)).await.unwrap();
                produced += 1;
            }
        }
        for p in 0..2 {
            c.fetch("m", p, 0, 1 << 20).await.unwrap();
        }
        let delta = c.metrics().await.unwrap().since(&before);
        (delta, produced)
    });
    // Exactly the requests in between, on both shards (the shared port forwards).
    assert_eq!(delta.shards, 2);
    assert_eq!(delta.value("api.native.Produce.requests"), Some(produced));
    assert_eq!(delta.value("api.native.Fetch.requests"), Some(2));
    assert_eq!(delta.value("api.native.Fetch.errors"), Some(0));
    let fetch = delta.distribution("api.native.Fetch").unwrap();
    assert_eq!(fetch.count_recorded(), 2);
    assert!(fetch.sum > 0);
    for stage in [
        "decode",
        "queue_wait",
        "partition_op",
        "encode",
        "socket_write",
    ] {
        let d = delta.distribution(&format!("stage.{stage}")).unwrap();
        assert_eq!(d.count_recorded(), produced + 2, "stage {stage}");
    }
    // Each produce's group commit: a flush (acks=1) or an fdatasync (acks=all).
    let flushes = delta.distribution("stage.flush").unwrap().count_recorded();
    let syncs = delta
        .distribution("stage.fdatasync")
        .unwrap()
        .count_recorded();
    assert_eq!((flushes, syncs), (2, 2));
    assert!(delta.value("api.native.Produce.bytes_in").unwrap() > 0);
    assert!(delta.value("open_fds").unwrap() > 0);
    assert_eq!(delta.value("open_partitions"), Some(2));

    let metrics = server.listen_addr("metrics.listen");
    let (status, body) = http(&metrics, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        sample_sum(&body, "shardlog_requests_total", &["api=\"Produce\""]),
        produced as f64
    );
    for shard in ["shard=\"0\"", "shard=\"1\""] {
        assert_eq!(sample_sum(&body, "shardlog_open_partitions", &[shard]), 1.0);
    }
    assert!(
        sample_sum(
            &body,
            "shardlog_stage_duration_seconds_count",
            &["stage=\"queue_wait\""]
        ) >= 6.0
    );
    // Every sample line is `name{labels} value` or `name value`.
    let sample =
        regex::Regex::new(r#"^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? \S+$"#).unwrap();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        assert!(sample.is_match(line), "not a sample line: {line:?}");
    }

    // Bad requests get a 4xx and change nothing; the server keeps serving.
    let cases: [(&[u8], &str); 4] = [
        (b"POST /metrics HTTP/1.1\r\n\r\n", "405"),
        (b"GET /other HTTP/1.1\r\n\r\n", "404"),
        (b"\x00\x01garbage\r\n\r\n", "400"),
        (&[b'a'; 10_000], "431"),
    ];
    for (request, want) in cases {
        let (status, _) = http(&metrics, request);
        assert!(status.contains(want), "{want}: got {status:?}");
    }
    let (status, _) = http(&metrics, b"GET /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        c.fetch("m", 0, 0, 1024).await.unwrap();
    });
}
