//! How loadgen's connections reach the server: plain, or under the listener's TLS and SASL
//! as `--command-config` / `-X` say (set once at start, read by every client thread).

use std::sync::OnceLock;
use std::time::Duration;

use shardlog::client::{Client, ClientSecurity, DEFAULT_TIMEOUT};

static SECURITY: OnceLock<ClientSecurity> = OnceLock::new();

/// Sets the security every later connection uses (once, before any connects).
pub fn set_security(security: ClientSecurity) {
    let _ = SECURITY.set(security);
}

pub async fn connect(addr: &str) -> Result<Client, String> {
    let plaintext = ClientSecurity::plaintext();
    let security = SECURITY.get().unwrap_or(&plaintext);
    let timeout: Duration = DEFAULT_TIMEOUT;
    Client::connect_secure(addr, security, timeout)
        .await
        .map_err(|e| e.to_string())
}
