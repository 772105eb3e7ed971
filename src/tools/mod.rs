//! Command-line tools: `dump-log` works on files offline; the others talk to a server.

mod acl_target;
pub mod acls;
mod acls_live;
mod acls_offline;
pub mod client_config;
pub mod cluster;
pub mod consume;
pub mod consumer_groups;
pub mod crash_check;
pub mod decommission;
pub mod delete_records;
pub mod dump_log;
pub mod file_window;
pub mod get_offsets;
mod groups_routing;
pub mod leaders;
pub mod log_dirs;
pub mod native_blocking;
pub mod native_groups;
pub mod partitioner;
pub mod probe;
pub mod produce;
pub mod reassign;
mod reassign_throttle;
pub mod remote_files;
pub mod replica_view;
mod retry;
pub mod secure_stream;
pub mod time_arg;
pub mod time_window;
pub mod timestamps;
pub mod topic_changes;
pub mod topics;
pub mod users;

use crate::client::{Client, ClientError};
use crate::protocol::TopicMetadata;

/// Every tool's default server: the native listener's default address.
pub const DEFAULT_SERVER: &str = "127.0.0.1:7411";

/// The global --timeout-ms's default.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The server a tool talks to: every tool's arguments flatten it.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerAddr {
    /// Server address, or several comma-separated, tried in order (Kafka's
    /// --bootstrap-server, kcat's -b).
    #[arg(
        long,
        short = 'b',
        visible_aliases = ["bootstrap-server", "broker-list"],
        default_value = DEFAULT_SERVER
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
/// A bootstrap list (Kafka's --bootstrap-server: comma-separated addresses) is tried in
/// order; the first server that answers is used.
pub(crate) async fn connect(server: &ServerAddr) -> Result<Client, String> {
    let mut failures = Vec::new();
    for addr in bootstrap_list(&server.bootstrap) {
        match connect_one(addr, server).await {
            Ok(client) => return Ok(client),
            Err(e) => failures.push((addr, e)),
        }
    }
    Err(bootstrap_failures(failures))
}

/// The addresses of a bootstrap list, in order.
pub fn bootstrap_list(bootstrap: &str) -> Vec<&str> {
    let list: Vec<&str> = bootstrap
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if list.is_empty() {
        return vec![bootstrap];
    }
    list
}

/// Why no address of a bootstrap list answered: one address's own words, or each's.
pub fn bootstrap_failures(failures: Vec<(&str, String)>) -> String {
    assert!(!failures.is_empty(), "a bootstrap list has an address");
    if failures.len() == 1 {
        return failures
            .into_iter()
            .next()
            .map(|(_, e)| e)
            .unwrap_or_default();
    }
    let each: Vec<String> = failures.iter().map(|(a, e)| format!("{a}: {e}")).collect();
    format!(
        "no server of the bootstrap list answered ({})",
        each.join("; ")
    )
}

async fn connect_one(bootstrap: &str, server: &ServerAddr) -> Result<Client, String> {
    let timeout = std::time::Duration::from_millis(server.timeout_ms.max(1));
    let security = server.client.security()?;
    if security.protocol != crate::security::SecurityProtocol::Plaintext {
        return connect_secured(bootstrap, &security, timeout).await;
    }
    let probed = probe::probe(bootstrap, timeout);
    if probed.is_err() && probe::speaks_tls(bootstrap, timeout) {
        return Err(format!("{bootstrap} is a TLS listener (SSL or SASL_SSL): give the client's security with --command-config FILE or -X (security.protocol, ssl.ca.location, sasl.mechanism, sasl.username, sasl.password)"));
    }
    let addr = match probed? {
        probe::Protocol::Native => bootstrap.to_string(),
        _ => {
            let native = probe::native_address_of(bootstrap, timeout).ok_or_else(|| {
                format!("{bootstrap} speaks Kafka's protocol but did not say where shardlog's native listener is: point this tool at it (--listen, port 7411 by default), or, on a SASL listener, give the credentials with --command-config FILE or -X (security.protocol, sasl.mechanism, sasl.username, sasl.password)")
            })?;
            eprintln!("note: {bootstrap} is shardlog's Kafka listener; using its native listener {native}");
            native
        }
    };
    Client::connect_with_timeout(&addr, timeout)
        .await
        .map_err(|e| e.to_string())
}

/// A secured listener, under TLS and SASL as the client config says. Secured Kafka
/// listeners are the usual target: the Kafka client is tried first and, when it is one of
/// shardlog's, asked where the native listener is (then reached under its own protocol
/// with the same credentials); otherwise the address is taken for the native listener.
async fn connect_secured(
    bootstrap: &str,
    security: &crate::security::client::ClientSecurity,
    timeout: std::time::Duration,
) -> Result<Client, String> {
    let through_kafka =
        secure_stream::kafka_client(bootstrap, security, timeout).and_then(|mut kafka| {
            probe::native_listener_of(&mut kafka, bootstrap)
                .ok_or_else(|| "it did not say where the native listener is".to_string())
        });
    let (native, protocol) = match through_kafka {
        Ok(found) => found,
        Err(kafka_err) => {
            return Client::connect_secure(bootstrap, security, timeout)
                .await
                .map_err(|e| {
                    format!(
                    "{bootstrap}: {e} (as shardlog's native protocol); {kafka_err} (as Kafka's)"
                )
                })
        }
    };
    eprintln!("note: {bootstrap} is shardlog's Kafka listener; using its native listener {native} ({protocol})");
    let connected = match protocol.as_str() {
        "PLAINTEXT" => Client::connect_with_timeout(&native, timeout).await,
        _ => Client::connect_secure(&native, security, timeout).await,
    };
    connected.map_err(|e| format!("{native}: {e}"))
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
        // Partitions are counted on from here (keys hashed, lines dealt in turn).
        Some(t) if t.error_code == crate::protocol::ErrorCode::None && t.partitions.is_empty() => {
            Err(format!("topic {topic:?} has no partitions"))
        }
        Some(t) if t.error_code == crate::protocol::ErrorCode::None => Ok(t.clone()),
        _ => Err(format!("topic {topic:?} does not exist")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bootstrap_list_is_tried_in_order_and_its_failures_are_named() {
        assert_eq!(bootstrap_list("a:1, b:2,,c:3"), ["a:1", "b:2", "c:3"]);
        assert_eq!(bootstrap_list("a:1"), ["a:1"]);
        let one = bootstrap_failures(vec![("a:1", "refused".to_string())]);
        assert_eq!(one, "refused", "one address keeps its own words");
        let two = vec![
            ("a:1", "refused".to_string()),
            ("b:2", "timed out".to_string()),
        ];
        assert_eq!(
            bootstrap_failures(two),
            "no server of the bootstrap list answered (a:1: refused; b:2: timed out)"
        );
    }
}
