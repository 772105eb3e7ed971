//! Connections to other nodes kept for the next request, per shard: forwarded admin
//! requests, transaction markers and a leader's checks with a coordinator would otherwise
//! each pay a TCP connect, a TLS handshake and a SASL exchange (SCRAM's key derivation
//! costs the client milliseconds). A connection is taken out while in use (never shared),
//! given back after a whole answer, and at most `MAX_IDLE` wait per node and purpose, none
//! older than `MAX_IDLE_AGE` (the other node closes idle connections too).

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::peer::{peer_address, Peer};
use super::wire_error::KafkaWireError;
use crate::cluster::ClusterView;
use crate::security::client::ClientSecurity;

/// Idle connections kept per (node address, client id).
const MAX_IDLE: usize = 4;
/// An idle connection older than this is closed rather than reused.
const MAX_IDLE_AGE: Duration = Duration::from_secs(30);

type Key = (String, &'static str);

thread_local! {
    static IDLE: RefCell<HashMap<Key, Vec<(Peer, Instant)>>> = RefCell::new(HashMap::new());
}

/// One request to node `to` (its inter-broker listener in `view`), over a kept connection
/// or a new one, within `timeout` for the connect and again for the answer. A kept
/// connection the other side closed meanwhile is replaced once.
pub async fn call(
    view: Option<&ClusterView>,
    (to, security): (i32, &ClientSecurity),
    client_id: &'static str,
    (key, version, request): (ApiKey, i16, &RequestKind),
    timeout: Duration,
) -> Result<ResponseKind, KafkaWireError> {
    let pool_key = (peer_address(view, to, security.protocol)?, client_id);
    if let Some(mut peer) = take(&pool_key) {
        match peer.call(key, version, request, timeout).await {
            Ok(answer) => {
                give_back(pool_key, peer);
                return Ok(answer);
            }
            // Closed while idle (idle timeout, re-authentication due): once more below.
            Err(KafkaWireError::Io { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let mut peer = Peer::connect(&pool_key.0, security, timeout, client_id).await?;
    let answer = peer.call(key, version, request, timeout).await?;
    give_back(pool_key, peer);
    Ok(answer)
}

/// The newest idle connection under `key` young enough to reuse; older ones are closed.
fn take(key: &Key) -> Option<Peer> {
    IDLE.with_borrow_mut(|idle| {
        let kept = idle.get_mut(key)?;
        kept.retain(|(_, since)| since.elapsed() < MAX_IDLE_AGE);
        let peer = kept.pop().map(|(peer, _)| peer);
        assert!(kept.len() < MAX_IDLE, "the pool's bound");
        peer
    })
}

/// Keeps `peer` (which just gave a whole answer) for the next request, within the bound.
fn give_back(key: Key, peer: Peer) {
    IDLE.with_borrow_mut(|idle| {
        let kept = idle.entry(key).or_default();
        if kept.len() < MAX_IDLE {
            kept.push((peer, Instant::now()));
        }
        assert!(kept.len() <= MAX_IDLE, "the pool's bound");
    });
}
