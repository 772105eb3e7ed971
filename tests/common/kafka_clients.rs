//! The real Kafka clients the tests drive: the virtual environment
//! `scripts/install-test-deps.sh` makes, its scripts, and running them with a time bound.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's python (the test fails, naming the installer, when it is missing).
pub fn python() -> PathBuf {
    let p = repo().join("target/kafka-venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-deps.sh (scripts/test.sh does)",
        p.display()
    );
    p
}

/// `python tests/kafka_clients/<script> args...`
pub fn script(name: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("tests/kafka_clients").join(name))
        .args(args);
    cmd
}

/// Starts a client script that prints `ready` once it is set up, and waits for that line;
/// the child keeps running (the caller kills it).
pub fn start_until(cmd: &mut Command, ready: &str) -> std::process::Child {
    use std::io::BufRead;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), ready, "{cmd:?} did not get ready");
    child
}

/// Runs a command to completion, killing it after `limit`.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
