//! Server settings: defaults, an optional `key=value` file, and command-line overrides, with
//! every client-facing bound checked in one place.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use crate::protocol::DEFAULT_MAX_FRAME_BYTES;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    /// Shared address every shard listens on (SO_REUSEPORT). Shard i also listens on
    /// `port + 1 + i`.
    pub listen: SocketAddr,
    pub shards: usize,
    /// Largest request frame accepted; larger ones are refused unread.
    pub max_frame_bytes: usize,
    /// Request bytes one connection may have in flight before the server stops reading it.
    pub max_inflight_bytes_per_connection: usize,
    pub max_connections_per_shard: usize,
    pub max_partitions_per_topic: u32,
    /// Memory glommio registers for I/O buffers per shard.
    pub io_memory_bytes: usize,
    /// Budget of each shard's read cache of `.log` and index pages.
    pub cache_bytes: u64,
    /// Let DropCaches come from other hosts than loopback.
    pub allow_remote_admin: bool,
    /// Time allowed for in-flight requests to finish at shutdown.
    pub shutdown_timeout_ms: u64,
    /// How long an idle shard spins before parking in the kernel (0 = park at once).
    /// Spinning trades CPU for wake-up latency; worth it only on dedicated cores.
    pub spin_before_park_us: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("./data"),
            listen: "127.0.0.1:7411".parse().unwrap(),
            shards: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_inflight_bytes_per_connection: 64 << 20,
            max_connections_per_shard: 1024,
            max_partitions_per_topic: 1024,
            io_memory_bytes: 10 << 20,
            cache_bytes: 256 << 20,
            allow_remote_admin: false,
            shutdown_timeout_ms: 10_000,
            spin_before_park_us: 0,
        }
    }
}

fn bad(key: &str, why: impl std::fmt::Display) -> String {
    format!("config {key}: {why}")
}

impl ServerConfig {
    /// Applies a `key=value` file (`#` comments). Keys: data.dir, listen, shards,
    /// max.frame.bytes, max.inflight.bytes.per.connection, max.connections.per.shard,
    /// max.partitions.per.topic, io.memory.bytes, cache.bytes, allow.remote.admin,
    /// shutdown.timeout.ms, spin.before.park.us.
    pub fn apply_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("{}:{}: expected key=value", path.display(), n + 1))?;
            self.set(k.trim(), v.trim())?;
        }
        Ok(())
    }

    pub fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
            v.parse()
                .map_err(|_| bad(key, format!("{v:?} is not a number")))
        }
        match key {
            "data.dir" => self.data_dir = PathBuf::from(v),
            "listen" => self.listen = parse_listen(v)?,
            "shards" => self.shards = num(key, v)?,
            "max.frame.bytes" => self.max_frame_bytes = num(key, v)?,
            "max.inflight.bytes.per.connection" => {
                self.max_inflight_bytes_per_connection = num(key, v)?
            }
            "max.connections.per.shard" => self.max_connections_per_shard = num(key, v)?,
            "max.partitions.per.topic" => self.max_partitions_per_topic = num(key, v)?,
            "io.memory.bytes" => self.io_memory_bytes = num(key, v)?,
            "cache.bytes" => self.cache_bytes = num(key, v)?,
            "allow.remote.admin" => {
                self.allow_remote_admin = match v {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad(key, format!("{v:?} is not true or false"))),
                }
            }
            "shutdown.timeout.ms" => self.shutdown_timeout_ms = num(key, v)?,
            "spin.before.park.us" => self.spin_before_park_us = num(key, v)?,
            _ => return Err(format!("unknown server config key {key:?}")),
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<(), String> {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        if self.shards == 0 || self.shards > cpus {
            return Err(bad(
                "shards",
                format!("{} must be between 1 and the {cpus} available CPUs (one pinned executor per CPU)", self.shards),
            ));
        }
        if !(1024..=(1 << 30)).contains(&self.max_frame_bytes) {
            return Err(bad("max.frame.bytes", "must be between 1 KiB and 1 GiB"));
        }
        if self.max_inflight_bytes_per_connection < self.max_frame_bytes {
            return Err(bad(
                "max.inflight.bytes.per.connection",
                "must be at least max.frame.bytes",
            ));
        }
        if self.cache_bytes > 1 << 40 {
            return Err(bad("cache.bytes", "must be at most 1 TiB per shard"));
        }
        if self.spin_before_park_us > 1_000_000 {
            return Err(bad("spin.before.park.us", "must be at most 1 second"));
        }
        if self.max_connections_per_shard == 0 {
            return Err(bad("max.connections.per.shard", "must be at least 1"));
        }
        if self.max_partitions_per_topic == 0 || self.max_partitions_per_topic > 100_000 {
            return Err(bad(
                "max.partitions.per.topic",
                "must be between 1 and 100000",
            ));
        }
        let last_port = self.listen.port() as usize + self.shards;
        if self.listen.port() == 0 || last_port > u16::MAX as usize {
            return Err(bad(
                "listen",
                "needs a fixed port with room for one port per shard above it",
            ));
        }
        Ok(())
    }

    /// The per-shard port of shard `i`.
    pub fn shard_port(&self, i: usize) -> u16 {
        self.listen.port() + 1 + i as u16
    }
}

/// Parses HOST:PORT (a name such as localhost is resolved).
pub fn parse_listen(v: &str) -> Result<SocketAddr, String> {
    v.to_socket_addrs()
        .map_err(|e| bad("listen", format!("{v:?}: {e}")))?
        .next()
        .ok_or_else(|| bad("listen", format!("{v:?} resolves to no address")))
}
