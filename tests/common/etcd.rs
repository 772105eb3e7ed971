//! A real etcd member (Debian's etcd-server, installed by `scripts/install-test-deps.sh`)
//! on free loopback ports with its data in a temp directory: the consensus store of the
//! cluster-mode tests. It can be killed and started again on the same data and ports.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::server_proc::free_port;

pub struct EtcdServer {
    child: Option<Child>,
    pub client_port: u16,
    peer_port: u16,
    /// Plain HTTP /health and /metrics (`--listen-metrics-urls`): how a TLS member is
    /// seen to be up without a client certificate.
    health_port: u16,
    data: PathBuf,
    tls: Option<EtcdTls>,
}

/// A member that serves clients over TLS only and asks each for a certificate its CA
/// signed (`--client-cert-auth`).
#[derive(Clone)]
pub struct EtcdTls {
    /// The member's certificate, the CA's and its key, in one PEM file.
    pub keystore: PathBuf,
    /// The CA that signs the member's and the clients' certificates.
    pub ca: PathBuf,
}

fn binary() -> &'static str {
    let found = Command::new("sh")
        .args(["-c", "command -v etcd"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "etcd is missing: run scripts/install-test-deps.sh (scripts/test.sh does)"
    );
    "etcd"
}

impl EtcdServer {
    /// Starts a one-member etcd over `data` and waits (bounded) until it answers.
    pub fn start(data: &Path) -> EtcdServer {
        Self::start_with(data, None)
    }

    /// As [`EtcdServer::start`], serving clients over TLS with client certificates.
    pub fn start_tls(data: &Path, tls: EtcdTls) -> EtcdServer {
        Self::start_with(data, Some(tls))
    }

    fn start_with(data: &Path, tls: Option<EtcdTls>) -> EtcdServer {
        for _ in 0..10 {
            let mut etcd = EtcdServer {
                child: None,
                client_port: free_port(),
                peer_port: free_port(),
                health_port: free_port(),
                data: data.to_path_buf(),
                tls: tls.clone(),
            };
            if etcd.spawn() {
                return etcd;
            }
        }
        panic!("etcd did not start");
    }

    /// The value of `cluster.etcd.endpoints` for this member.
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// kill -9 (the cluster's state stays in its data directory).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts again on the same data and ports.
    pub fn restart(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.spawn() {
            assert!(Instant::now() < deadline, "etcd did not restart");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn spawn(&mut self) -> bool {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let health = format!("http://127.0.0.1:{}", self.health_port);
        let mut command = Command::new(binary());
        if let Some(tls) = &self.tls {
            command
                .arg("--cert-file")
                .arg(&tls.keystore)
                .arg("--key-file")
                .arg(&tls.keystore)
                .arg("--trusted-ca-file")
                .arg(&tls.ca)
                .arg("--client-cert-auth");
        }
        let child = command
            .args(["--listen-metrics-urls", &health])
            .args(["--name", "test", "--data-dir"])
            .arg(&self.data)
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &format!("test={peer}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            let exited = self.child.as_mut().unwrap().try_wait().unwrap().is_some();
            if exited {
                break; // a port was taken: the caller tries others
            }
            if self.answers() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        false
    }

    /// Whether the member serves its health endpoint.
    fn answers(&self) -> bool {
        let addr = format!("127.0.0.1:{}", self.health_port);
        let Ok(mut s) = std::net::TcpStream::connect(&addr) else {
            return false;
        };
        use std::io::{Read, Write};
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let request = format!("GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        let mut reply = String::new();
        s.write_all(request.as_bytes()).is_ok()
            && s.read_to_string(&mut reply).is_ok()
            && reply.contains("\"health\":\"true\"")
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}
