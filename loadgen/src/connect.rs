//! How loadgen's connections reach the server: plain, or under the listener's TLS and SASL
//! as `--command-config` / `-X` say (set once at start, read by every client thread). A
//! bootstrap list (comma-separated, as Kafka's `--bootstrap-server`) is tried in order.

use std::sync::OnceLock;
use std::time::Duration;

use shardlog::client::{Client, ClientSecurity, DEFAULT_TIMEOUT};
use shardlog::tools::{bootstrap_failures, bootstrap_list};

static SECURITY: OnceLock<ClientSecurity> = OnceLock::new();

/// Sets the security every later connection uses (once, before any connects).
pub fn set_security(security: ClientSecurity) {
    let _ = SECURITY.set(security);
}

/// A connection to the first address of `bootstrap` that answers.
pub async fn connect(bootstrap: &str) -> Result<Client, String> {
    connect_first(bootstrap).await.map(|(client, _)| client)
}

/// [`connect`], and the address that answered.
pub async fn connect_first(bootstrap: &str) -> Result<(Client, String), String> {
    let plaintext = ClientSecurity::plaintext();
    let security = SECURITY.get().unwrap_or(&plaintext);
    let timeout: Duration = DEFAULT_TIMEOUT;
    let mut failures = Vec::new();
    for addr in bootstrap_list(bootstrap) {
        match Client::connect_secure(addr, security, timeout).await {
            Ok(client) => return Ok((client, addr.to_string())),
            Err(e) => failures.push((addr, e.to_string())),
        }
    }
    Err(bootstrap_failures(failures))
}
