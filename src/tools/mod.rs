//! Command-line tools: `dump-log` works on files offline; the others talk to a server.

pub mod acls;
mod acls_live;
mod acls_offline;
pub mod client_config;
pub mod consume;
pub mod consumer_groups;
pub mod crash_check;
pub mod delete_records;
pub mod dump_log;
pub mod file_window;
pub mod get_offsets;
pub mod log_dirs;
pub mod native_blocking;
pub mod native_groups;
pub mod partitioner;
pub mod probe;
pub mod produce;
pub mod remote_files;
mod retry;
pub mod secure_stream;
pub mod time_arg;
pub mod time_window;
pub mod timestamps;
pub mod topics;
pub mod users;

use crate::client::{Client, ClientError};
use crate::protocol::TopicMetadata;

/// The global --timeout-ms's default.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The server a tool talks to: every tool's arguments flatten it.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerAddr {
    /// Server address (Kafka's --bootstrap-server, kcat's -b).
    #[arg(
        long,
        short = 'b',
        visible_aliases = ["bootstrap-server", "broker-list"],
        default_value = "127.0.0.1:7411"
    )]
    pub bootstrap: String,
    /// Connect and per-request timeout: the command line's global --timeout-ms.
    #[arg(skip = DEFAULT_TIMEOUT_MS)]
    pub timeout_ms: u64,
    /// The listener's security (--command-config, -X).
    #[command(flatten)]
    pub client: client_config::ClientConfigArgs,
}

impl ServerAddr {
    pub fn new(bootstrap: impl Into<String>, timeout_ms: u64) -> Self {
        ServerAddr {
            bootstrap: bootstrap.into(),
            timeout_ms,
            client: Default::default(),
        }
    }
}

/// Connects to a server's native listener; `timeout_ms` bounds the connect and every
/// request. Pointed at shardlog's Kafka listener, the tool finds the native listener of the
/// same server and uses it (saying so on stderr); pointed at another Kafka broker, it says
/// in one line that this tool speaks shardlog's native protocol.
/// On a secured listener (`--command-config`, `-X security.protocol=...`) it connects
/// under TLS and SASL as configured, without the probe.
pub(crate) async fn connect(server: &ServerAddr) -> Result<Client, String> {
    let bootstrap = server.bootstrap.as_str();
    let timeout = std::time::Duration::from_millis(server.timeout_ms.max(1));
    let security = server.client.security()?;
    if security.protocol != crate::security::SecurityProtocol::Plaintext {
        let connected = Client::connect_secure(bootstrap, &security, timeout).await;
        return connected.map_err(|e| e.to_string());
    }
    let addr = match probe::probe(bootstrap, timeout)? {
        probe::Protocol::Native => bootstrap.to_string(),
        _ => {
            let native = probe::native_address_of(bootstrap, timeout).ok_or_else(|| {
                format!("{bootstrap} speaks Kafka's protocol, not shardlog's native one: point this tool at shardlog's native listener (--listen, port 7411 by default)")
            })?;
            eprintln!("note: {bootstrap} is shardlog's Kafka listener; using its native listener {native}");
            native
        }
    };
    Client::connect_with_timeout(&addr, timeout)
        .await
        .map_err(|e| e.to_string())
}

/// Fetches one topic's metadata, turning "unknown topic" into a clear error.
pub(crate) async fn topic_metadata(
    client: &mut Client,
    topic: &str,
) -> Result<TopicMetadata, String> {
    let md = client
        .metadata(Some(vec![topic.to_string()]))
        .await
        .map_err(|e: ClientError| e.to_string())?;
    match md.topic(topic) {
        Some(t) if t.error_code == crate::protocol::ErrorCode::None => Ok(t.clone()),
        _ => Err(format!("topic {topic:?} does not exist")),
    }
}
