//! Client for the shardlog protocol, used by the CLI tools, tests and the load generator.
//! Runs on a glommio executor. `send`/`recv` allow pipelining; `call` is one round trip.

use std::net::ToSocketAddrs;
use std::time::Duration;

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{Preallocated, TcpStream};

use crate::io::deadline::within;
use crate::protocol::{
    ApiKey, ClusterMetadataResponse, ErrorCode, LogDirInfo, MetadataResponse, Request, Response,
    ResponseBody, StatsResponse, ACKS_NONE, DEFAULT_MAX_FRAME_BYTES,
};
pub use crate::security::client::ClientSecurity;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("cannot connect to a shardlog server at {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("connection to {addr} failed: {source}")]
    Io {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("server refused the request: {code}: {message}")]
    Server { code: ErrorCode, message: String },
    #[error("no answer from {addr} within {ms} ms (raise it with --timeout-ms)")]
    Timeout { addr: String, ms: u64 },
    #[error("protocol error: {0}")]
    Protocol(String),
    /// TLS or SASL could not be set up (a file, a certificate, the credentials).
    #[error("{0}")]
    Security(String),
}

impl ClientError {
    /// The server's error code, if the server answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type ClientResult<T> = Result<T, ClientError>;

/// Records returned by a fetch, with the partition's bounds at the time.
#[derive(Debug, Clone)]
pub struct FetchResult {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub records: Bytes,
}

/// A read_committed fetch (FetchCommitted).
#[derive(Debug)]
pub struct CommittedFetch {
    pub log_start_offset: i64,
    /// The first offset of the earliest open transaction (the log end when none is open):
    /// a read_committed reader stops here.
    pub last_stable_offset: i64,
    /// (producer id, first offset) of the aborted transactions the records overlap.
    pub aborted: Vec<(i64, i64)>,
    pub records: Bytes,
}

/// The connection's bytes: plain TCP, or TLS over it.
trait ClientStream: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin {}
impl<T: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin> ClientStream for T {}

pub struct Client {
    stream: Box<dyn ClientStream>,
    addr: String,
    next_correlation_id: i32,
    max_frame: usize,
    timeout: Duration,
}

/// Default connect and per-request timeout (`--timeout-ms` in the tools).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `call` keeps retrying a request the server answers with the retriable NotReady
/// (a shard still opening its partitions at start-up).
const NOT_READY_RETRY: Duration = Duration::from_secs(10);

impl Client {
    pub async fn connect(addr: &str) -> ClientResult<Self> {
        Self::connect_with_timeout(addr, DEFAULT_TIMEOUT).await
    }

    /// Connects within `timeout`; every later request must also be answered within it.
    pub async fn connect_with_timeout(addr: &str, timeout: Duration) -> ClientResult<Self> {
        Self::connect_secure(addr, &ClientSecurity::plaintext(), timeout).await
    }

    /// Connects under the listener's security protocol: TLS first (SSL, SASL_SSL), then
    /// SASL authentication (SASL_PLAINTEXT, SASL_SSL).
    pub async fn connect_secure(
        addr: &str,
        security: &ClientSecurity,
        timeout: Duration,
    ) -> ClientResult<Self> {
        let tcp = Self::connect_tcp(addr, timeout).await?;
        let stream: Box<dyn ClientStream> = match security.protocol.is_tls() {
            false => Box::new(tcp.buffered()),
            true => Box::new(Self::start_tls(addr, security, tcp, timeout).await?),
        };
        let mut client = Client {
            stream,
            addr: addr.to_string(),
            next_correlation_id: 0,
            max_frame: DEFAULT_MAX_FRAME_BYTES + 1024,
            timeout,
        };
        if let Some((mechanism, user, password)) = &security.sasl {
            client.authenticate(*mechanism, user, password).await?;
        }
        Ok(client)
    }

    async fn start_tls(
        addr: &str,
        security: &ClientSecurity,
        tcp: TcpStream,
        timeout: Duration,
    ) -> ClientResult<futures_rustls::client::TlsStream<TcpStream<Preallocated>>> {
        let setup = |e: crate::security::client::ClientSetupError| ClientError::Security(e.0);
        let config = security.tls_config().map_err(setup)?;
        let name = crate::security::client::server_name(addr).map_err(setup)?;
        let connector = futures_rustls::TlsConnector::from(config);
        within(timeout, connector.connect(name, tcp.buffered()))
            .await
            .map_err(|e| ClientError::Security(format!("TLS handshake with {addr}: {e}")))
    }

    /// SASL as the native protocol frames it: SaslHandshake, then the mechanism's tokens.
    async fn authenticate(
        &mut self,
        mechanism: crate::security::SaslMechanism,
        user: &str,
        password: &str,
    ) -> ClientResult<()> {
        let refused =
            |e: crate::security::scram::ScramError| ClientError::Security(format!("SASL: {e}"));
        let handshake = Request::SaslHandshake {
            mechanism: mechanism.name().to_string(),
        };
        self.call_once(&handshake).await?;
        let (mut exchange, mut next) =
            crate::security::scram_client::ClientSasl::start(mechanism, user, password);
        loop {
            let answer = self.sasl_token(next).await?;
            match exchange.next(&answer).map_err(refused)? {
                Some(more) => next = more,
                None => return Ok(()),
            }
        }
    }

    async fn sasl_token(&mut self, token: Vec<u8>) -> ClientResult<Vec<u8>> {
        let request = Request::SaslAuthenticate {
            auth_bytes: Bytes::from(token),
        };
        match self.call_once(&request).await? {
            ResponseBody::SaslAuthenticate { auth_bytes, .. } => Ok(auth_bytes.to_vec()),
            other => Self::unexpected(other),
        }
    }

    /// A TCP connection to `addr` within `timeout`.
    async fn connect_tcp(addr: &str, timeout: Duration) -> ClientResult<TcpStream> {
        let connect_err = |source: std::io::Error| ClientError::Connect {
            addr: addr.to_string(),
            source,
        };
        let resolved = addr
            .to_socket_addrs()
            .map_err(connect_err)?
            .next()
            .ok_or_else(|| connect_err(std::io::Error::other("the address resolves to nothing")))?;
        // Not glommio's connect_timeout: its linked io_uring timeouts crashed the process
        // here (see io/deadline.rs).
        let stream = within(timeout, async {
            TcpStream::connect(resolved)
                .await
                .map_err(std::io::Error::from)
        })
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut => ClientError::Timeout {
                addr: addr.to_string(),
                ms: timeout.as_millis() as u64,
            },
            _ => connect_err(e),
        })?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn io(&self, e: std::io::Error) -> ClientError {
        if e.kind() == std::io::ErrorKind::TimedOut {
            return ClientError::Timeout {
                addr: self.addr.clone(),
                ms: self.timeout.as_millis() as u64,
            };
        }
        ClientError::Io {
            addr: self.addr.clone(),
            source: e,
        }
    }

    /// Writes a request; returns its correlation id.
    pub async fn send(&mut self, req: &Request) -> ClientResult<i32> {
        let cid = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let frame = req.encode_frame(cid);
        // A flush sends what TLS still holds (plain TCP has nothing to flush).
        within(self.timeout, async {
            self.stream.write_all(&frame).await?;
            self.stream.flush().await
        })
        .await
        .map_err(|e| self.io(e))?;
        Ok(cid)
    }

    /// Writes raw bytes (tests use it to send malformed frames).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> ClientResult<()> {
        let written = async {
            self.stream.write_all(bytes).await?;
            self.stream.flush().await
        };
        written.await.map_err(|e| self.io(e))
    }

    /// Reads one response frame and decodes it as the reply to a `key` request.
    pub async fn recv(&mut self, key: ApiKey) -> ClientResult<Response> {
        let mut size = [0u8; 4];
        within(self.timeout, self.stream.read_exact(&mut size))
            .await
            .map_err(|e| self.io(e))?;
        let size = i32::from_be_bytes(size);
        if size < 6 || size as usize > self.max_frame {
            return Err(ClientError::Protocol(format!(
                "response frame size {size} is out of bounds"
            )));
        }
        let mut body = vec![0u8; size as usize];
        within(self.timeout, self.stream.read_exact(&mut body))
            .await
            .map_err(|e| self.io(e))?;
        Response::decode(key, &Bytes::from(body))
            .map_err(|e| ClientError::Protocol(format!("{key:?} response: {e}")))
    }

    /// One round trip; a server error becomes `ClientError::Server`. A request the server
    /// answers with the retriable NotReady is sent again for a few seconds.
    pub async fn call(&mut self, req: &Request) -> ClientResult<ResponseBody> {
        let deadline = std::time::Instant::now() + NOT_READY_RETRY;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.call_once(req).await {
                Err(e)
                    if e.code() == Some(ErrorCode::NotReady)
                        && std::time::Instant::now() + pause < deadline =>
                {
                    glommio::timer::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    /// One round trip, NotReady included (for a caller that retries elsewhere).
    pub async fn call_once(&mut self, req: &Request) -> ClientResult<ResponseBody> {
        let cid = self.send(req).await?;
        let resp = self.recv(req.api_key()).await?;
        // A connection-level refusal (e.g. TooManyConnections) carries correlation id -1.
        if let (-1, Err((code, message))) = (resp.correlation_id, &resp.result) {
            return Err(ClientError::Server {
                code: *code,
                message: message.clone(),
            });
        }
        if resp.correlation_id != cid {
            return Err(ClientError::Protocol(format!(
                "expected correlation id {cid}, got {}",
                resp.correlation_id
            )));
        }
        resp.result
            .map_err(|(code, message)| ClientError::Server { code, message })
    }

    fn unexpected<T>(body: ResponseBody) -> ClientResult<T> {
        Err(ClientError::Protocol(format!(
            "unexpected response {body:?}"
        )))
    }

    pub async fn metadata(
        &mut self,
        topics: Option<Vec<String>>,
    ) -> ClientResult<MetadataResponse> {
        match self.call(&Request::Metadata { topics }).await? {
            ResponseBody::Metadata(m) => Ok(m),
            other => Self::unexpected(other),
        }
    }

    /// The cluster's nodes, controller and partition leaders (ClusterMetadata).
    pub async fn cluster_metadata(
        &mut self,
        topics: Option<Vec<String>>,
    ) -> ClientResult<ClusterMetadataResponse> {
        match self.call(&Request::ClusterMetadata { topics }).await? {
            ResponseBody::ClusterMetadata(m) => Ok(m),
            other => Self::unexpected(other),
        }
    }

    pub async fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        configs: Vec<(String, String)>,
    ) -> ClientResult<()> {
        self.call(&Request::CreateTopic {
            name: name.to_string(),
            partitions,
            configs,
        })
        .await
        .map(|_| ())
    }

    pub async fn delete_topic(&mut self, name: &str) -> ClientResult<()> {
        self.call(&Request::DeleteTopic {
            name: name.to_string(),
        })
        .await
        .map(|_| ())
    }

    /// Produces raw v2 batches. Returns (base offset, last offset, log append time or -1),
    /// or `None` for acks=0 (the server sends no reply).
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        acks: i16,
        records: Bytes,
    ) -> ClientResult<Option<(i64, i64, i64)>> {
        let req = Request::Produce {
            topic: topic.to_string(),
            partition,
            acks,
            records,
        };
        if acks == ACKS_NONE {
            self.send(&req).await?;
            return Ok(None);
        }
        match self.call(&req).await? {
            ResponseBody::Produce {
                base_offset,
                last_offset,
                log_append_time,
            } => Ok(Some((base_offset, last_offset, log_append_time))),
            other => Self::unexpected(other),
        }
    }

    /// Produces to several partitions in one request (one round trip); one outcome per
    /// partition, in order (none with acks=0).
    pub async fn multi_produce(
        &mut self,
        acks: i16,
        partitions: Vec<crate::protocol::multi::ProduceEntry>,
    ) -> ClientResult<Vec<crate::protocol::multi::Produced>> {
        let req = Request::MultiProduce { acks, partitions };
        if acks == ACKS_NONE {
            self.send(&req).await?;
            return Ok(Vec::new());
        }
        match self.call(&req).await? {
            ResponseBody::MultiProduce(all) => Ok(all),
            other => Self::unexpected(other),
        }
    }

    /// Fetches from several partitions in one request, at most `max_bytes` in all; one
    /// outcome per partition, in order.
    pub async fn multi_fetch(
        &mut self,
        max_bytes: i32,
        partitions: Vec<crate::protocol::multi::FetchEntry>,
    ) -> ClientResult<Vec<crate::protocol::multi::Fetched>> {
        let req = Request::MultiFetch {
            max_bytes,
            partitions,
        };
        match self.call(&req).await? {
            ResponseBody::MultiFetch(all) => Ok(all),
            other => Self::unexpected(other),
        }
    }

    pub async fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    ) -> ClientResult<FetchResult> {
        let req = Request::Fetch {
            topic: topic.to_string(),
            partition,
            offset,
            max_bytes,
        };
        match self.call(&req).await? {
            ResponseBody::Fetch {
                log_start_offset,
                log_end_offset,
                records,
            } => Ok(FetchResult {
                log_start_offset,
                log_end_offset,
                records: records.to_bytes(),
            }),
            other => Self::unexpected(other),
        }
    }

    /// Makes the server's next lookups cold; returns its counters after dropping.
    pub async fn drop_caches(
        &mut self,
        drop_kernel_page_cache: bool,
    ) -> ClientResult<StatsResponse> {
        match self
            .call(&Request::DropCaches {
                drop_kernel_page_cache,
            })
            .await?
        {
            ResponseBody::Stats(s) => Ok(s),
            other => Self::unexpected(other),
        }
    }

    /// The server's counters (device reads, cache hits and size, RSS).
    pub async fn stats(&mut self) -> ClientResult<StatsResponse> {
        match self.call(&Request::Stats).await? {
            ResponseBody::Stats(s) => Ok(s),
            other => Self::unexpected(other),
        }
    }

    /// A lookup by time in one round trip: the first record with a timestamp >= `timestamp`
    /// (as `list_offsets`) as `Some((offset, timestamp))`, and the batches from it (as
    /// `fetch` at that offset); `None` and no records when no record qualifies.
    /// Fetch with read_committed isolation: records below the last stable offset and the
    /// aborted transactions they overlap, (producer id, first offset) each.
    pub async fn fetch_committed(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    ) -> ClientResult<CommittedFetch> {
        let req = Request::FetchCommitted {
            topic: topic.to_string(),
            partition,
            offset,
            max_bytes,
        };
        match self.call(&req).await? {
            ResponseBody::FetchCommitted {
                log_start_offset,
                last_stable_offset,
                aborted,
                records,
            } => Ok(CommittedFetch {
                log_start_offset,
                last_stable_offset,
                aborted,
                records: records.to_bytes(),
            }),
            other => Self::unexpected(other),
        }
    }

    pub async fn fetch_at_time(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
        max_bytes: i32,
    ) -> ClientResult<(Option<(i64, i64)>, FetchResult)> {
        let req = Request::FetchAtTime {
            topic: topic.to_string(),
            partition,
            timestamp,
            max_bytes,
        };
        match self.call(&req).await? {
            ResponseBody::FetchAtTime {
                offset,
                timestamp,
                log_start_offset,
                log_end_offset,
                records,
            } => Ok((
                (offset >= 0).then_some((offset, timestamp)),
                FetchResult {
                    log_start_offset,
                    log_end_offset,
                    records: records.to_bytes(),
                },
            )),
            other => Self::unexpected(other),
        }
    }

    /// Every shard's latency distributions and counters, merged (PROTOCOL.md, Metrics).
    pub async fn metrics(&mut self) -> ClientResult<crate::metrics::MetricsReport> {
        match self.call(&Request::Metrics).await? {
            ResponseBody::Metrics(m) => {
                m.report().map_err(|e| ClientError::Protocol(e.to_string()))
            }
            other => Self::unexpected(other),
        }
    }

    /// Kafka's ListOffsets for one partition: `Some((offset, timestamp))`, or `None` when no
    /// record has a timestamp >= the target.
    pub async fn list_offsets(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> ClientResult<Option<(i64, i64)>> {
        let req = Request::ListOffsets {
            topic: topic.to_string(),
            partition,
            timestamp,
        };
        match self.call(&req).await? {
            ResponseBody::ListOffsets {
                offset: -1,
                timestamp: -1,
            } => Ok(None),
            ResponseBody::ListOffsets { offset, timestamp } => Ok(Some((offset, timestamp))),
            other => Self::unexpected(other),
        }
    }

    /// Kafka's DeleteRecords: returns the new log start offset (low watermark).
    pub async fn delete_records(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> ClientResult<i64> {
        let req = Request::DeleteRecords {
            topic: topic.to_string(),
            partition,
            offset,
        };
        match self.call(&req).await? {
            ResponseBody::DeleteRecords { low_watermark } => Ok(low_watermark),
            other => Self::unexpected(other),
        }
    }

    /// Commits offsets for `group` from outside it (refused with GroupNotEmpty while the
    /// group has members); per partition its outcome.
    pub async fn offset_commit(
        &mut self,
        group: &str,
        offsets: Vec<crate::protocol::groups::OffsetCommitEntry>,
    ) -> ClientResult<Vec<(String, i32, crate::protocol::ErrorCode)>> {
        let req = Request::OffsetCommit {
            group: group.to_string(),
            offsets,
        };
        match self.call(&req).await? {
            ResponseBody::OffsetCommit(codes) => Ok(codes),
            other => Self::unexpected(other),
        }
    }

    /// The group's committed (topic, partition, offset, metadata), for `topics` or all.
    pub async fn offset_fetch(
        &mut self,
        group: &str,
        topics: Option<Vec<String>>,
    ) -> ClientResult<Vec<crate::protocol::groups::OffsetCommitEntry>> {
        let req = Request::OffsetFetch {
            group: group.to_string(),
            topics,
        };
        match self.call(&req).await? {
            ResponseBody::OffsetFetch(offsets) => Ok(offsets),
            other => Self::unexpected(other),
        }
    }

    /// Every group: (group, protocol type, state).
    pub async fn list_groups(&mut self) -> ClientResult<Vec<(String, String, String)>> {
        match self.call(&Request::ListGroups).await? {
            ResponseBody::ListGroups(groups) => Ok(groups),
            other => Self::unexpected(other),
        }
    }

    pub async fn describe_group(
        &mut self,
        group: &str,
    ) -> ClientResult<crate::protocol::groups::GroupInfo> {
        let req = Request::DescribeGroup {
            group: group.to_string(),
        };
        match self.call(&req).await? {
            ResponseBody::DescribeGroup(g) => Ok(g),
            other => Self::unexpected(other),
        }
    }

    /// Deletes an inactive group and its committed offsets.
    pub async fn delete_group(&mut self, group: &str) -> ClientResult<()> {
        let req = Request::DeleteGroup {
            group: group.to_string(),
        };
        match self.call(&req).await? {
            ResponseBody::Empty => Ok(()),
            other => Self::unexpected(other),
        }
    }

    /// Sets `set` and returns `delete` to their defaults, without a restart.
    /// Grows a topic to `count` partitions (Kafka's CreatePartitions).
    pub async fn create_partitions(&mut self, topic: &str, count: i32) -> ClientResult<()> {
        let req = Request::CreatePartitions {
            topic: topic.to_string(),
            count,
        };
        self.call(&req).await.map(|_| ())
    }

    pub async fn alter_configs(
        &mut self,
        topic: &str,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    ) -> ClientResult<()> {
        let req = Request::AlterConfigs {
            topic: topic.to_string(),
            set,
            delete,
        };
        self.call(&req).await.map(|_| ())
    }

    /// The data directory and per-partition offsets, sizes, segments and cleaner state
    /// (`None`: every topic).
    pub async fn describe_logs(&mut self, topics: Option<Vec<String>>) -> ClientResult<LogDirInfo> {
        match self.call(&Request::DescribeLogs { topics }).await? {
            ResponseBody::DescribeLogs(logs) => Ok(logs),
            other => Self::unexpected(other),
        }
    }

    /// Rolls the active segment of a partition (-1: of every partition).
    pub async fn roll_segments(&mut self, topic: &str, partition: i32) -> ClientResult<()> {
        let req = Request::RollSegments {
            topic: topic.to_string(),
            partition,
        };
        self.call(&req).await.map(|_| ())
    }

    /// Rebuilds lost remote manifests of `topic` (of `partition`, or every one for -1) from
    /// the segment objects in the bucket: each partition's outcome.
    pub async fn rebuild_remote_manifest(
        &mut self,
        topic: &str,
        partition: i32,
    ) -> ClientResult<Vec<crate::protocol::RebuiltManifest>> {
        let req = Request::RebuildRemoteManifest {
            topic: topic.to_string(),
            partition,
        };
        match self.call(&req).await? {
            ResponseBody::RebuildRemoteManifest(rebuilt) => Ok(rebuilt),
            other => Self::unexpected(other),
        }
    }

    /// Runs retention and a cleaning pass on every partition of `topic` now; returns
    /// (segments deleted, bytes deleted, records removed by cleaning).
    pub async fn run_log_maintenance(&mut self, topic: &str) -> ClientResult<(i64, i64, i64)> {
        let req = Request::RunLogMaintenance {
            topic: topic.to_string(),
        };
        match self.call(&req).await? {
            ResponseBody::LogMaintenance {
                segments_deleted,
                bytes_deleted,
                records_removed,
            } => Ok((segments_deleted, bytes_deleted, records_removed)),
            other => Self::unexpected(other),
        }
    }
}
