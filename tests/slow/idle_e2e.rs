//! A server left alone with idle clients stays flat, through the real `shardlog serve`
//! binary: idle confluent-kafka consumers long-polling at the log end of partitions on both
//! shards, and idle native followers (`shardlog consume --follow`), for 60 s. The live heap
//! (bytes and blocks, counted by the server's allocator), tasks, registered long polls, fds
//! and CPU time must not grow with the time waited; once the clients go, their waits and
//! tasks are gone too.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::kafka_clients;
use common::server_proc::ServerProc;
use shardlog::metrics::MetricsReport;

const PARTITIONS: usize = 4;
const KAFKA_CONSUMERS: usize = 5;
const NATIVE_FOLLOWERS: usize = 2;
const SOAK: Duration = Duration::from_secs(60);

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn value(m: &MetricsReport, name: &str) -> i64 {
    m.value(name)
        .unwrap_or_else(|| panic!("metric {name} missing")) as i64
}

fn shardlog(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shardlog"));
    c.args(args);
    c
}

fn start_kafka_consumers(server: &ServerProc) -> Killed {
    let (partitions, count) = (PARTITIONS.to_string(), KAFKA_CONSUMERS.to_string());
    let mut cmd = kafka_clients::script(
        "idle.py",
        &[&server.kafka_addr(), "idle", &partitions, &count],
    );
    Killed(kafka_clients::start_until(&mut cmd, "READY"))
}

fn start_native_followers(server: &ServerProc) -> Vec<Killed> {
    (0..NATIVE_FOLLOWERS)
        .map(|_| {
            let child = shardlog(&["consume", "--topic", "idle", "-o", "end", "--follow"])
                .args(["-b", &server.addr()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            Killed(child)
        })
        .collect()
}

#[test]
fn idle_consumers_cost_nothing_and_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let partitions = PARTITIONS.to_string();
    let created = shardlog(&["topics", "create", "--topic", "idle", "--partitions"])
        .args([partitions.as_str(), "-b", &server.addr()])
        .status()
        .unwrap();
    assert!(created.success());
    let baseline = server.metrics();

    let kafka = start_kafka_consumers(&server);
    let native = start_native_followers(&server);
    // Connected, first polls done, every lazy structure made.
    std::thread::sleep(Duration::from_secs(5));
    let (before, cpu_before, fds_before) =
        (server.metrics(), server.cpu_ticks(), server.open_fds());
    let started = Instant::now();
    std::thread::sleep(SOAK);
    let after = server.metrics();
    let cpu = (server.cpu_ticks() - cpu_before) as f64 / 100.0;
    let waited = started.elapsed().as_secs_f64();

    let grew = |name: &str| value(&after, name) - value(&before, name);
    let report = format!(
        "over {waited:.0} s: heap {} -> {} bytes, {} -> {} blocks; tasks {} -> {}; \
         long polls {} -> {}; server CPU {cpu:.2} s; fds {fds_before} -> {}\nserver log:\n{}",
        value(&before, "heap_live_bytes"),
        value(&after, "heap_live_bytes"),
        value(&before, "heap_live_blocks"),
        value(&after, "heap_live_blocks"),
        value(&before, "tasks"),
        value(&after, "tasks"),
        value(&before, "append_waiters"),
        value(&after, "append_waiters"),
        server.open_fds(),
        server.log_text(),
    );
    eprintln!("{}", report.lines().next().unwrap());
    // Before the fix: 20-50 MB/s and about one core.
    assert!(grew("heap_live_bytes") < 8 << 20, "heap grew: {report}");
    assert!(grew("heap_live_blocks") < 10_000, "blocks grew: {report}");
    assert!(grew("tasks") < 50, "tasks grew: {report}");
    let polls = (KAFKA_CONSUMERS * PARTITIONS) as i64;
    assert!(value(&after, "append_waiters") <= polls, "{report}");
    assert!(cpu < 0.1 * waited, "an idle server burns CPU: {report}");
    assert!(server.open_fds() <= fds_before + 2, "fds grew: {report}");

    drop((kafka, native));
    // Their waits end with their connections (at most one poll's wait).
    let deadline = Instant::now() + Duration::from_secs(10);
    let gone = loop {
        let m = server.metrics();
        let idle = value(&m, "append_waiters") == 0
            && value(&m, "tasks") <= value(&baseline, "tasks")
            && value(&m, "connections") <= 1;
        if idle || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(value(&gone, "append_waiters"), 0, "{report}");
    assert!(
        value(&gone, "tasks") <= value(&baseline, "tasks"),
        "tasks left behind: {} (before the clients: {})",
        value(&gone, "tasks"),
        value(&baseline, "tasks")
    );
}
