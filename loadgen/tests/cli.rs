//! loadgen through its real binary against a real server on loopback: write and lookup
//! produce the documented JSON, and bad input gets clear errors.

use std::process::Command;

use serde_json::Value;

fn loadgen(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn start_server(dir: &std::path::Path) -> (shardlog::server::ServerHandle, String) {
    for _ in 0..20 {
        let port = fastrand::u16(10_000..32_000);
        let config = shardlog::server::ServerConfig {
            data_dir: dir.to_path_buf(),
            listen: format!("127.0.0.1:{port}").parse().unwrap(),
            kafka_listen: None,
            shards: 2.min(std::thread::available_parallelism().unwrap().get()),
            io_memory_bytes: 2 << 20,
            cache_bytes: 16 << 20,
            ..Default::default()
        };
        if let Ok(h) = shardlog::server::start(config) {
            return (h, format!("127.0.0.1:{port}"));
        }
    }
    panic!("no server");
}

/// `loadgen write` of 100-byte records in 2 KiB batches to a new topic, with `shape`'s
/// options: its stdout and the JSON it wrote.
fn write_small(addr: &str, dir: &std::path::Path, topic: &str, shape: &[&str]) -> (String, Value) {
    let json = dir.join(format!("{topic}.json"));
    let mut args = vec!["write", "--bootstrap", addr, "--topic", topic, "--create"];
    args.extend(["--record-size", "100", "--batch-bytes", "2KiB"]);
    args.extend(shape);
    args.extend(["--json", json.to_str().unwrap()]);
    let (ok, out, err) = loadgen(&args);
    assert!(ok, "{err}");
    let doc = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (out, doc)
}

#[test]
fn batch_bytes_sizes_batches_and_the_cpu_is_reported_per_record() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, addr) = start_server(tmp.path());
    let (out, w) = write_small(&addr, tmp.path(), "small", &["--total-bytes", "1MiB"]);
    assert!(out.contains("ns per record"), "{out}");
    assert_eq!(w["config"]["batch_records"].as_u64(), Some(20), "{w}");
    let (ok, _, err) = loadgen(&["write", "--topic", "small", "--batch-bytes", "0"]);
    assert!(!ok && err.contains("--batch-bytes"), "{err}");
    server.stop().unwrap();
}

#[test]
fn a_linger_at_a_rate_shapes_batches_and_counts_the_wait_in_latency() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, addr) = start_server(tmp.path());
    // 2,000 records/s on one connection with linger.ms 5: 11 records per batch (not the
    // 20 a 2 KiB batch holds), the oldest of them 5 ms old when its batch is sent.
    let shape = [
        "--rate",
        "2000",
        "--linger-ms",
        "5",
        "--connections",
        "1",
        "--duration",
        "1s",
    ];
    let (out, w) = write_small(&addr, tmp.path(), "lingered", &shape);
    assert!(out.contains("records/s"), "{out}");
    assert_eq!(w["config"]["batch_records"].as_u64(), Some(11), "{w}");
    assert_eq!(w["config"]["linger_ms"].as_f64(), Some(5.0), "{w}");
    let p50_us = w["write"]["latency_us"]["p50"].as_u64().unwrap();
    assert!(
        p50_us >= 5_000,
        "the linger is part of a record's latency: {w}"
    );
    let (ok, _, err) = loadgen(&["write", "--topic", "lingered", "--linger-ms", "5"]);
    assert!(!ok && err.contains("--rate"), "{err}");
    server.stop().unwrap();
}

#[test]
fn write_and_lookup_report_the_documented_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, addr) = start_server(tmp.path());
    let wjson = tmp.path().join("w.json");
    let (ok, out, err) = loadgen(&[
        "write",
        "--bootstrap",
        &addr,
        "--topic",
        "lg",
        "--create",
        "--partitions",
        "2",
        "--record-size",
        "512",
        "--batch-records",
        "20",
        "--total-bytes",
        "4MiB",
        "--connections",
        "3",
        "--acks",
        "all",
        "--json",
        wjson.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("MB/s") && out.contains("p99.99"), "{out}");
    let w: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&wjson).unwrap()).unwrap();
    assert!(w["write"]["mb_per_s"].as_f64().unwrap() > 0.0);
    assert!(w["write"]["records_per_s"].as_f64().unwrap() > 0.0);
    for k in ["p50", "p90", "p99", "p999", "p9999", "max"] {
        assert!(w["write"]["latency_us"][k].as_u64().unwrap() > 0, "{k}");
    }
    assert!(w["write"]["bytes"].as_u64().unwrap() >= 4 << 20);
    assert!(w["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(w["git_revision"].is_string());

    // Open loop at a fixed rate: latencies corrected for coordinated omission.
    let (ok, out, err) = loadgen(&[
        "write",
        "--bootstrap",
        &addr,
        "--topic",
        "lg",
        "--record-size",
        "100",
        "--batch-records",
        "10",
        "--duration",
        "500ms",
        "--rate",
        "20000",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("coordinated omission"), "{out}");

    // Both partitions in every request (MultiProduce), with the server's breakdown of
    // exactly those requests and a throughput plot.
    let mjson = tmp.path().join("m.json");
    let plots = tmp.path().join("plots");
    let (ok, out, err) = loadgen(&[
        "write",
        "--bootstrap",
        &addr,
        "--topic",
        "lg",
        "--record-size",
        "100",
        "--batch-records",
        "10",
        "--total-bytes",
        "1MiB",
        "--connections",
        "1",
        "--partitions-per-request",
        "2",
        "--json",
        mjson.to_str().unwrap(),
        "--plot",
        plots.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("server breakdown"), "{out}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mjson).unwrap()).unwrap();
    let rows = m["write"]["server"]["rows"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["stage"] == name).cloned();
    let multi = row("api.native.MultiProduce").expect("MultiProduce timed");
    assert!(
        (multi["per_op"].as_f64().unwrap() - 1.0).abs() < 0.01,
        "{multi}"
    );
    // Two partition ops per request, each queued and run on its partition's task.
    let ops = row("stage.partition_op").expect("partition ops timed");
    assert!(
        (ops["per_op"].as_f64().unwrap() - 2.0).abs() < 0.01,
        "{ops}"
    );
    assert!(std::fs::read_to_string(plots.join("write-throughput.svg"))
        .unwrap()
        .contains("<svg"));

    for by in ["offset", "timestamp"] {
        let ljson = tmp.path().join(format!("l-{by}.json"));
        let (ok, out, err) = loadgen(&[
            "lookup",
            "--bootstrap",
            &addr,
            "--topic",
            "lg",
            "--by",
            by,
            "--cache",
            "both",
            "--count",
            "30",
            "--json",
            ljson.to_str().unwrap(),
            "--plot",
            plots.to_str().unwrap(),
        ]);
        assert!(ok, "{err}");
        let svg = std::fs::read_to_string(plots.join(format!("lookup-{by}.svg"))).unwrap();
        assert!(
            svg.contains("network round trip") && svg.contains("warm"),
            "legend"
        );
        assert!(
            out.contains(&format!("{by} cold")) && out.contains(&format!("{by} warm")),
            "{out}"
        );
        let l: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&ljson).unwrap()).unwrap();
        let warm = &l["lookup"][format!("{by}_warm")];
        assert_eq!(
            warm["device_reads_per_lookup_max"].as_u64().unwrap(),
            0,
            "warm lookups read nothing"
        );
        let cold = &l["lookup"][format!("{by}_cold")];
        assert!(
            cold["device_reads_per_lookup_mean"].as_f64().unwrap() >= 1.0,
            "cold lookups read the disk"
        );
        assert_eq!(cold["lookups"].as_u64().unwrap(), 30);
        // The server's own time per lookup is there, and never more than the client saw.
        let api = if by == "offset" {
            "api.native.Fetch"
        } else {
            "api.native.FetchAtTime"
        };
        let rows = warm["server"]["rows"].as_array().unwrap();
        let server = rows
            .iter()
            .find(|r| r["stage"] == api)
            .expect("lookup timed");
        assert!((server["per_op"].as_f64().unwrap() - 1.0).abs() < 0.01);
        assert!(server["p50_us"].as_f64().unwrap() <= warm["latency_us"]["p50"].as_f64().unwrap());
    }
    server.stop().unwrap();
}

#[test]
fn bad_input_gets_clear_errors() {
    let (ok, _, err) = loadgen(&["write", "--bootstrap", "127.0.0.1:1", "--topic", "x"]);
    assert!(!ok);
    assert!(
        err.contains("cannot connect to a shardlog server at 127.0.0.1:1"),
        "{err}"
    );
    let (ok, _, err) = loadgen(&["write", "--topic", "x", "--total-bytes", "12XB"]);
    assert!(!ok);
    assert!(err.contains("unknown size unit"), "{err}");
    let (ok, _, err) = loadgen(&["write", "--topic", "x", "--duration", "soon"]);
    assert!(!ok);
    assert!(err.contains("is not a duration"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    let (server, addr) = start_server(tmp.path());
    let (ok, _, err) = loadgen(&[
        "lookup",
        "--bootstrap",
        &addr,
        "--topic",
        "missing",
        "--by",
        "offset",
    ]);
    assert!(!ok);
    assert!(err.contains("topic \"missing\" does not exist"), "{err}");
    let (ok, _, err) = loadgen(&["write", "--bootstrap", &addr, "--topic", "missing"]);
    assert!(!ok);
    assert!(err.contains("does not exist"), "{err}");
    let (ok, _, err) = loadgen(&["consume", "--bootstrap", &addr, "--topic", "missing"]);
    assert!(!ok);
    assert!(err.contains("topic \"missing\" does not exist"), "{err}");
    let (ok, _, err) = loadgen(&["consume", "--topic", "x", "--fetch-bytes", "3GiB"]);
    assert!(!ok);
    assert!(
        err.contains("--fetch-bytes 3221225472 is over 2 GiB"),
        "{err}"
    );
    server.stop().unwrap();
}

/// `loadgen consume` reads every byte of the topic, cold (the first pass after DropCaches
/// reads the disk) and warm (the cache holds it all: no device read), and reports the
/// server's CPU per GB, as `loadgen write` does.
#[test]
fn consume_reads_the_whole_topic_cold_and_warm() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, addr) = start_server(tmp.path());
    let wjson = tmp.path().join("w.json");
    let (ok, _, err) = loadgen(&[
        "write",
        "--bootstrap",
        &addr,
        "--topic",
        "c",
        "--create",
        "--partitions",
        "2",
        "--record-size",
        "1KiB",
        "--batch-records",
        "100",
        "--total-bytes",
        "4MiB",
        "--json",
        wjson.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let w: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&wjson).unwrap()).unwrap();
    assert!(w["write"]["server_cpu_seconds_per_gb"].as_f64().unwrap() > 0.0);
    let written = w["write"]["records"].as_u64().unwrap();

    let cjson = tmp.path().join("c.json");
    let (ok, out, err) = loadgen(&[
        "consume",
        "--bootstrap",
        &addr,
        "--topic",
        "c",
        "--fetch-bytes",
        "256KiB",
        "--json",
        cjson.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("consume cold") && out.contains("CPU-seconds per GB"),
        "{out}"
    );
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cjson).unwrap()).unwrap();
    let (cold, warm) = (&c["consume"]["cold"], &c["consume"]["warm"]);
    // Every record once: about 1 KiB each plus batch framing.
    let bytes = cold["bytes"].as_u64().unwrap();
    assert!(
        bytes >= written * 1024 && bytes < written * 1100,
        "{bytes} bytes"
    );
    assert_eq!(
        warm["bytes"].as_u64().unwrap(),
        bytes,
        "both passes read it all"
    );
    assert!(cold["fetches"].as_u64().unwrap() >= bytes / (256 << 10));
    assert!(
        cold["device_reads_per_fetch"].as_f64().unwrap() > 0.0,
        "cold reads the disk"
    );
    assert_eq!(
        warm["device_reads_per_fetch"].as_f64().unwrap(),
        0.0,
        "warm reads the cache"
    );
    assert!(cold["fetch_latency_us"]["p50"].as_u64().unwrap() > 0);
    assert!(
        c["consume"]["cold"]["server_cpu_seconds_per_gb"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    server.stop().unwrap();
}
