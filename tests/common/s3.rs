//! An S3-compatible server for the tiered-storage tests: s3s-fs (installed by
//! `scripts/install-test-deps.sh` into `target/test-tools`), serving one bucket from a
//! directory, with the keys and environment shardlog's object-store client reads.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::server_proc::free_port;

pub const BUCKET: &str = "tiered";
const ACCESS_KEY: &str = "shardlog-test";
const SECRET_KEY: &str = "shardlog-test-secret";

pub struct S3Server {
    child: Child,
    pub port: u16,
    /// s3s-fs's root: the bucket is the directory `BUCKET` below it, each key a file.
    pub root: PathBuf,
}

fn binary() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-tools/bin/s3s-fs");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/install-test-deps.sh (scripts/test.sh does)",
        bin.display()
    );
    bin
}

impl S3Server {
    /// Starts s3s-fs on a free port over `root` and waits (bounded) until it accepts.
    pub fn start(root: &Path) -> S3Server {
        std::fs::create_dir_all(root.join(BUCKET)).unwrap();
        for _ in 0..10 {
            let port = free_port();
            let child = Command::new(binary())
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                .arg(root)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut server = S3Server {
                child,
                port,
                root: root.to_path_buf(),
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if server.child.try_wait().unwrap().is_some() {
                    break; // port taken: try another
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return server;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = server.child.kill();
        }
        panic!("s3s-fs did not start");
    }

    /// Server keys of a shardlog using this store under `prefix`.
    pub fn server_keys(&self, prefix: &str) -> Vec<(String, String)> {
        vec![
            (
                "remote.storage.url".into(),
                format!("s3://{BUCKET}/{prefix}"),
            ),
            (
                "remote.storage.endpoint".into(),
                format!("http://127.0.0.1:{}", self.port),
            ),
        ]
    }

    /// The shell prefix that gives the server its credentials, as an operator would: the
    /// standard AWS environment variables.
    pub fn env_wrapper(&self) -> String {
        format!(
            "export AWS_ACCESS_KEY_ID={ACCESS_KEY} AWS_SECRET_ACCESS_KEY={SECRET_KEY} AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true"
        )
    }

    /// The environment a client of this store needs (the tools' `dump-log` of remote
    /// segments): credentials, region, and the endpoint.
    pub fn env_vars(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID".into(), ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), SECRET_KEY.into()),
            ("AWS_REGION".into(), "us-east-1".into()),
            ("AWS_ALLOW_HTTP".into(), "true".into()),
            (
                "AWS_ENDPOINT".into(),
                format!("http://127.0.0.1:{}", self.port),
            ),
        ]
    }

    /// The file holding an object.
    pub fn object(&self, key: &str) -> PathBuf {
        self.root.join(BUCKET).join(key)
    }

    /// A partition's manifest, parsed.
    pub fn manifest(&self, prefix: &str, topic: &str, partition: u32) -> Option<serde_json::Value> {
        let path = self.object(&format!(
            "{prefix}/topics/{topic}/{partition}/manifest.json"
        ));
        let text = std::fs::read_to_string(path).ok()?;
        Some(serde_json::from_str(&text).unwrap())
    }

    /// Freezes the server (SIGSTOP): connections hang, as with an unreachable store.
    pub fn pause(&self) {
        signal(self.child.id(), "-STOP");
    }

    pub fn resume(&self) {
        signal(self.child.id(), "-CONT");
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

impl Drop for S3Server {
    fn drop(&mut self) {
        signal(self.child.id(), "-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (base offset, last offset) of each segment a manifest names.
pub fn manifest_segments(m: &serde_json::Value) -> Vec<(i64, i64)> {
    m["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["base_offset"].as_i64().unwrap(),
                s["last_offset"].as_i64().unwrap(),
            )
        })
        .collect()
}
