//! The real `shardlog serve` binary as a child process: config file, captured stderr,
//! readiness, kill -9.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct ServerProc {
    pub child: Child,
    pub port: u16,
    pub data: PathBuf,
    pub log: PathBuf,
    config: Vec<(String, String)>,
    wrapper: Option<String>,
    /// The user id the server runs as (None: this process's).
    run_as: Option<u32>,
    /// How many "shardlog serving" lines the log held before this process started: the log
    /// is appended across restarts, so only a line past these says the new one is ready.
    served_before: usize,
}

const SERVING: &str = "shardlog serving";

fn serving_lines(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches(SERVING)
        .count()
}

/// A config value with its ports picked at this start attempt, so an attempt that lost
/// its port to another test retries with new ones: `kafka.listen=auto` (any `*.listen`)
/// and every `:auto` inside a value (`listeners=SSL://127.0.0.1:auto,...`).
fn with_free_ports(key: &str, value: &str) -> String {
    if value == "auto" && key.ends_with(".listen") {
        return format!("127.0.0.1:{}", free_port());
    }
    let mut pieces = value.split(":auto");
    let mut resolved = pieces.next().unwrap_or_default().to_string();
    for rest in pieces {
        resolved.push_str(&format!(":{}{rest}", free_port()));
    }
    resolved
}

/// A port with room for per-shard ports above it, below the ephemeral range (32768+) so
/// that no client socket of another test holds it.
pub fn free_port() -> u16 {
    fastrand::u16(10_000..32_000)
}

fn spawn(
    data: &Path,
    port: u16,
    config: &[(String, String)],
    log: &Path,
    wrapper: Option<&str>,
    run_as: Option<u32>,
) -> Child {
    let conf = log.with_extension("properties");
    let text: String = config.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(&conf, text).unwrap();
    let bin = env!("CARGO_BIN_EXE_shardlog");
    // The Kafka listener is off unless a test asks for it (`with_kafka`): tests run at once.
    let kafka = if config.iter().any(|(k, _)| k == "kafka.listen") {
        String::new()
    } else {
        " --kafka-listen off".to_string()
    };
    let args = format!(
        "{bin} serve --data-dir {} --listen 127.0.0.1:{port} --config {}{kafka}",
        data.display(),
        conf.display()
    );
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let script = match wrapper {
        Some(w) => format!("{w}; exec {args}"),
        None => format!("exec {args}"),
    };
    let mut command = Command::new("sh");
    if let Some(uid) = run_as {
        use std::os::unix::process::CommandExt;
        command.uid(uid).gid(uid);
    }
    command
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

impl ServerProc {
    /// Starts the server and waits until its port answers.
    pub fn start(data: &Path, shards: usize, config: &[(&str, &str)]) -> Self {
        Self::start_wrapped(data, shards, config, None)
    }

    /// As `start`, with a shell command run before exec (e.g. `ulimit -n 256`).
    pub fn start_wrapped(
        data: &Path,
        shards: usize,
        config: &[(&str, &str)],
        wrapper: Option<&str>,
    ) -> Self {
        Self::launch(data, shards, config, wrapper, None)
    }

    /// As `start`, as the user `uid` (its data directory made its own; the directory
    /// above it must let others in), so firewall rules can single its traffic out.
    #[allow(dead_code)]
    pub fn start_as(data: &Path, shards: usize, config: &[(&str, &str)], uid: u32) -> Self {
        std::fs::create_dir_all(data).unwrap();
        std::os::unix::fs::chown(data, Some(uid), Some(uid)).unwrap();
        Self::launch(data, shards, config, None, Some(uid))
    }

    fn launch(
        data: &Path,
        shards: usize,
        config: &[(&str, &str)],
        wrapper: Option<&str>,
        run_as: Option<u32>,
    ) -> Self {
        let mut config: Vec<(String, String)> = config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        config.push(("shards".into(), shards.to_string()));
        config.push(("io.memory.bytes".into(), (2 << 20).to_string()));
        let log = data.with_extension(format!("{}.log", fastrand::u32(..)));
        let base_config = config;
        for _ in 0..10 {
            let port = free_port();
            let config: Vec<(String, String)> = base_config
                .iter()
                .map(|(k, v)| (k.clone(), with_free_ports(k, v)))
                .collect();
            let served_before = serving_lines(&log);
            let child = spawn(data, port, &config, &log, wrapper, run_as);
            let mut s = ServerProc {
                served_before,
                child,
                port,
                data: data.to_path_buf(),
                log: log.clone(),
                config: config.clone(),
                wrapper: wrapper.map(str::to_string),
                run_as,
            };
            if s.wait_ready(Duration::from_secs(30)) {
                return s;
            }
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
        panic!(
            "server did not start; log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The Kafka listener's address (started with `kafka.listen=auto`).
    #[allow(dead_code)]
    pub fn kafka_addr(&self) -> String {
        self.listen_addr("kafka.listen")
    }

    /// The address the `listeners` entry `name` got (e.g. `SASL_PLAINTEXT://127.0.0.1:auto`).
    #[allow(dead_code)]
    pub fn listener(&self, name: &str) -> String {
        let prefix = format!("{name}://");
        self.listen_addr("listeners")
            .split(',')
            .find_map(|entry| entry.strip_prefix(&prefix).map(str::to_string))
            .unwrap_or_else(|| panic!("started with a {name} listener"))
    }

    /// The address a `*.listen` key got (started with `auto`).
    #[allow(dead_code)]
    pub fn listen_addr(&self, key: &str) -> String {
        self.config
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("started with {key}"))
    }

    /// Waits until the port accepts and every listener is bound, or the process exits
    /// (false).
    pub fn wait_ready(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                eprintln!("server exited during start-up: {status}");
                return false;
            }
            if std::net::TcpStream::connect(self.addr()).is_ok() {
                return self.wait_serving(deadline);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Every listener is bound once the server says it is serving (the Kafka listeners bind
    /// after the native one). A server that exits first (a port picked free was taken by
    /// another test meanwhile) or never says so is not ready: the caller starts another.
    fn wait_serving(&mut self, deadline: Instant) -> bool {
        while serving_lines(&self.log) <= self.served_before {
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            if exited || Instant::now() >= deadline {
                eprintln!("server listening natively but not serving (exited: {exited})");
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// kill -9, then wait until the killed process's listening sockets are gone (io_uring
    /// tears them down asynchronously; until then they accept and reset connections).
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        while shardlog::catalog::data_dir::port_has_listeners(self.port)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// kill -9, then start again on the same data directory and port.
    pub fn restart_after_kill(&mut self) {
        self.kill9();
        self.respawn();
    }

    /// Starts again (after it stopped) on the same data directory, port and config.
    pub fn respawn(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let wrapper = self.wrapper.as_deref();
            self.served_before = serving_lines(&self.log);
            let (data, config) = (&self.data, &self.config);
            self.child = spawn(data, self.port, config, &self.log, wrapper, self.run_as);
            if self.wait_ready(Duration::from_secs(30)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "restart failed:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log_path(&self) -> std::path::PathBuf {
        self.log.clone()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's metrics (native Metrics API), merged over shards.
    #[allow(dead_code)]
    pub fn metrics(&self) -> shardlog::metrics::MetricsReport {
        let addr = self.addr();
        super::client(move || async move {
            let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
            c.metrics().await.unwrap()
        })
    }

    /// Resident memory of the server process.
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kb * 1024
    }

    /// Open file descriptors of the server process.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// User + system CPU time of the process, in clock ticks (1/100 s here).
    #[allow(dead_code)]
    pub fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after_name.split(' ').collect();
        // utime and stime are fields 14 and 15 of stat; 12 and 13 after the name and state.
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    /// SIGTERM, then wait (bounded) for the exit: whether it exited 0.
    #[allow(dead_code)]
    pub fn terminate(&mut self, within: Duration) -> bool {
        unsafe { libc::kill(self.pid() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no exit within {within:?} of SIGTERM:\n{}", self.log_text());
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        self.kill9();
    }
}
