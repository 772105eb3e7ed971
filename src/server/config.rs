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
    /// Request and reply bytes all connections of one shard may hold at once (requests
    /// being read or run, replies not yet written). Bounds memory under slow readers.
    pub max_inflight_bytes_per_shard: usize,
    /// Sealed-segment files (.log, .index, .timeindex) a shard keeps open; the least
    /// recently used are closed and reopened on demand.
    pub max_open_sealed_files_per_shard: usize,
    /// A connection with no request for this long is closed (Kafka's connections.max.idle.ms).
    pub connections_max_idle_ms: u64,
    /// Once a frame has started, its rest must arrive within this; and a reply must be
    /// taken by the client within it. Otherwise the connection is closed.
    pub request_timeout_ms: u64,
    /// Host put in Metadata replies; empty: the address the client connected to.
    pub advertised_host: String,
    /// Let DropCaches also drop the whole host's kernel page cache (as root). Off by
    /// default: it affects every process on the machine.
    pub allow_drop_kernel_cache: bool,
    /// A partition rolls on segment.ms (client timestamps) at most once per this many ms.
    pub log_roll_min_interval_ms: i64,
    /// Retention runs on every partition this often (Kafka's
    /// log.retention.check.interval.ms).
    pub log_retention_check_interval_ms: u64,
    /// How often each shard looks for a log due for cleaning (log.cleaner.backoff.ms).
    pub log_cleaner_backoff_ms: u64,
    /// Memory for the cleaner's key map, per shard (log.cleaner.dedupe.buffer.size).
    pub log_cleaner_dedupe_buffer_size: usize,
    /// Bytes per second the cleaner of one shard reads plus writes (0: unlimited). Kafka's
    /// default is unlimited; shardlog's 64 MiB/s keeps the p99 of requests on the shard
    /// within ~1.5x while it cleans (benches/lifecycle.rs), as the fdatasyncs of cleaned
    /// segments otherwise stall the device for the shard's other I/O.
    pub log_cleaner_io_max_bytes_per_second: u64,
    /// Address of the Kafka-protocol listener (every shard accepts on it); `None`: off.
    /// On at 127.0.0.1:9092 by default; embedded servers (tests, benches) turn it off so
    /// that several can run at once.
    pub kafka_listen: Option<SocketAddr>,
    /// Producer ids InitProducerId reserves per persisted block (Kafka hands them out in
    /// blocks of 1000 too): one file write per block, never a reuse after a restart.
    pub producer_id_block_size: i64,
    /// Partitions of `__consumer_offsets`, fixed when it is created on first group use
    /// (Kafka's offsets.topic.num.partitions).
    pub offsets_topic_num_partitions: i32,
    /// How long a group's first join phase waits for more members (Kafka's
    /// group.initial.rebalance.delay.ms).
    pub group_initial_rebalance_delay_ms: u64,
    /// Session timeouts members may ask for (Kafka's group.min/max.session.timeout.ms).
    pub group_min_session_timeout_ms: i32,
    pub group_max_session_timeout_ms: i32,
    /// Committed offsets of a group without members expire this long after their commit
    /// (Kafka's offsets.retention.minutes, 7 days); offsets of deleted topics go at once.
    pub offsets_retention_minutes: u64,
    /// How often each coordinator shard looks for expired offsets.
    pub offsets_retention_check_interval_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("./data"),
            listen: SocketAddr::from(([127, 0, 0, 1], 7411)),
            kafka_listen: Some(SocketAddr::from(([127, 0, 0, 1], 9092))),
            producer_id_block_size: 1000,
            offsets_topic_num_partitions: 50,
            group_initial_rebalance_delay_ms: 3000,
            group_min_session_timeout_ms: 6000,
            group_max_session_timeout_ms: 1_800_000,
            offsets_retention_minutes: 10_080,
            offsets_retention_check_interval_ms: 600_000,
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
            max_inflight_bytes_per_shard: 256 << 20,
            max_open_sealed_files_per_shard: 1000,
            connections_max_idle_ms: 600_000,
            request_timeout_ms: 30_000,
            advertised_host: String::new(),
            allow_drop_kernel_cache: false,
            log_roll_min_interval_ms: 1000,
            log_retention_check_interval_ms: 300_000,
            log_cleaner_backoff_ms: 15_000,
            log_cleaner_dedupe_buffer_size: 128 << 20,
            log_cleaner_io_max_bytes_per_second: 64 << 20,
        }
    }
}

fn bad(key: &str, why: impl std::fmt::Display) -> String {
    format!("config {key}: {why}")
}

fn boolean(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, format!("{v:?} is not true or false"))),
    }
}

impl ServerConfig {
    /// Applies a `key=value` file (`#` comments). Keys: data.dir, listen, shards,
    /// max.frame.bytes, max.inflight.bytes.per.connection, max.connections.per.shard,
    /// max.partitions.per.topic, io.memory.bytes, cache.bytes, allow.remote.admin,
    /// shutdown.timeout.ms, spin.before.park.us, max.inflight.bytes.per.shard,
    /// max.open.sealed.files.per.shard, connections.max.idle.ms, request.timeout.ms,
    /// advertised.host, allow.drop.kernel.cache, log.roll.min.interval.ms,
    /// log.retention.check.interval.ms, log.cleaner.backoff.ms,
    /// log.cleaner.dedupe.buffer.size, log.cleaner.io.max.bytes.per.second, kafka.listen
    /// (`off` turns the Kafka listener off), producer.id.block.size,
    /// offsets.topic.num.partitions, group.initial.rebalance.delay.ms,
    /// group.min.session.timeout.ms, group.max.session.timeout.ms, offsets.retention.minutes,
    /// offsets.retention.check.interval.ms.
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
            "kafka.listen" => self.kafka_listen = parse_optional_listen(v)?,
            "producer.id.block.size" => self.producer_id_block_size = num(key, v)?,
            "offsets.topic.num.partitions" => self.offsets_topic_num_partitions = num(key, v)?,
            "group.initial.rebalance.delay.ms" => {
                self.group_initial_rebalance_delay_ms = num(key, v)?
            }
            "group.min.session.timeout.ms" => self.group_min_session_timeout_ms = num(key, v)?,
            "group.max.session.timeout.ms" => self.group_max_session_timeout_ms = num(key, v)?,
            "offsets.retention.minutes" => self.offsets_retention_minutes = num(key, v)?,
            "offsets.retention.check.interval.ms" => {
                self.offsets_retention_check_interval_ms = num(key, v)?
            }
            "shards" => self.shards = num(key, v)?,
            "max.frame.bytes" => self.max_frame_bytes = num(key, v)?,
            "max.inflight.bytes.per.connection" => {
                self.max_inflight_bytes_per_connection = num(key, v)?
            }
            "max.connections.per.shard" => self.max_connections_per_shard = num(key, v)?,
            "max.partitions.per.topic" => self.max_partitions_per_topic = num(key, v)?,
            "io.memory.bytes" => self.io_memory_bytes = num(key, v)?,
            "cache.bytes" => self.cache_bytes = num(key, v)?,
            "allow.remote.admin" => self.allow_remote_admin = boolean(key, v)?,
            "allow.drop.kernel.cache" => self.allow_drop_kernel_cache = boolean(key, v)?,
            "max.inflight.bytes.per.shard" => self.max_inflight_bytes_per_shard = num(key, v)?,
            "max.open.sealed.files.per.shard" => {
                self.max_open_sealed_files_per_shard = num(key, v)?
            }
            "connections.max.idle.ms" => self.connections_max_idle_ms = num(key, v)?,
            "request.timeout.ms" => self.request_timeout_ms = num(key, v)?,
            "advertised.host" => self.advertised_host = v.to_string(),
            "log.roll.min.interval.ms" => self.log_roll_min_interval_ms = num(key, v)?,
            "log.retention.check.interval.ms" => {
                self.log_retention_check_interval_ms = num(key, v)?
            }
            "log.cleaner.backoff.ms" => self.log_cleaner_backoff_ms = num(key, v)?,
            "log.cleaner.dedupe.buffer.size" => self.log_cleaner_dedupe_buffer_size = num(key, v)?,
            "log.cleaner.io.max.bytes.per.second" => {
                self.log_cleaner_io_max_bytes_per_second = num(key, v)?
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
        if self.max_inflight_bytes_per_shard < self.max_inflight_bytes_per_connection {
            return Err(bad(
                "max.inflight.bytes.per.shard",
                "must be at least max.inflight.bytes.per.connection",
            ));
        }
        if self.max_open_sealed_files_per_shard < 3 {
            return Err(bad(
                "max.open.sealed.files.per.shard",
                "must be at least 3 (one segment's files)",
            ));
        }
        if !(0..=86_400_000).contains(&self.log_roll_min_interval_ms) {
            return Err(bad(
                "log.roll.min.interval.ms",
                "must be between 0 and 1 day",
            ));
        }
        for (key, v) in [
            (
                "log.retention.check.interval.ms",
                self.log_retention_check_interval_ms,
            ),
            ("log.cleaner.backoff.ms", self.log_cleaner_backoff_ms),
        ] {
            if !(10..=86_400_000).contains(&v) {
                return Err(bad(key, "must be between 10 ms and 1 day"));
            }
        }
        if self.log_cleaner_dedupe_buffer_size < 1 << 10 {
            return Err(bad(
                "log.cleaner.dedupe.buffer.size",
                "must be at least 1 KiB",
            ));
        }
        for (key, v) in [
            ("connections.max.idle.ms", self.connections_max_idle_ms),
            ("request.timeout.ms", self.request_timeout_ms),
        ] {
            if !(100..=86_400_000).contains(&v) {
                return Err(bad(key, "must be between 100 ms and 1 day"));
            }
        }
        if !(1..=1000).contains(&self.offsets_topic_num_partitions) {
            return Err(bad(
                "offsets.topic.num.partitions",
                "must be between 1 and 1000",
            ));
        }
        if self.group_min_session_timeout_ms < 1
            || self.group_max_session_timeout_ms < self.group_min_session_timeout_ms
        {
            return Err(bad(
                "group.max.session.timeout.ms",
                "must be at least group.min.session.timeout.ms, which must be positive",
            ));
        }
        if !(1..=86_400_000).contains(&self.offsets_retention_check_interval_ms) {
            return Err(bad(
                "offsets.retention.check.interval.ms",
                "must be between 1 ms and 1 day",
            ));
        }
        if self.offsets_retention_minutes == 0 || self.offsets_retention_minutes > 1 << 30 {
            return Err(bad("offsets.retention.minutes", "must be positive"));
        }
        if self.group_initial_rebalance_delay_ms > 300_000 {
            return Err(bad(
                "group.initial.rebalance.delay.ms",
                "must be at most 5 minutes",
            ));
        }
        if !(1..=1_000_000).contains(&self.producer_id_block_size) {
            return Err(bad(
                "producer.id.block.size",
                "must be between 1 and 1000000",
            ));
        }
        if let Some(k) = self.kafka_listen {
            if self.listen_addrs()[..=self.shards]
                .iter()
                .any(|a| a.port() == k.port())
            {
                return Err(bad(
                    "kafka.listen",
                    format!("port {} is one of the native listener's ports", k.port()),
                ));
            }
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

    /// Every address the server listens on: the shared one, then each shard's own, then
    /// the Kafka listener's.
    pub fn listen_addrs(&self) -> Vec<SocketAddr> {
        std::iter::once(self.listen)
            .chain((0..self.shards).map(|i| SocketAddr::new(self.listen.ip(), self.shard_port(i))))
            .chain(self.kafka_listen)
            .collect()
    }

    /// The per-shard port of shard `i`.
    pub fn shard_port(&self, i: usize) -> u16 {
        self.listen.port() + 1 + i as u16
    }
}

/// Parses HOST:PORT, or `off` (also `none` or empty) for a listener that is turned off.
pub fn parse_optional_listen(v: &str) -> Result<Option<SocketAddr>, String> {
    match v {
        "" | "off" | "none" => Ok(None),
        _ => parse_listen(v).map(Some),
    }
}

/// Parses HOST:PORT (a name such as localhost is resolved).
pub fn parse_listen(v: &str) -> Result<SocketAddr, String> {
    v.to_socket_addrs()
        .map_err(|e| bad("listen", format!("{v:?}: {e}")))?
        .next()
        .ok_or_else(|| bad("listen", format!("{v:?} resolves to no address")))
}
