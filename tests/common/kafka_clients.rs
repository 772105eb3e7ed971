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
