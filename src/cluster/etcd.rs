//! etcd's v3 API through its JSON gateway (`/v3/...`, etcd's documented HTTP mapping of the
//! gRPC API: int64s as strings, keys and values as base64). Only what membership and the
//! controller need: leases, ranges by prefix, and transactions (compare revisions, then
//! put or delete). The gRPC client crates need `protoc` at build time, which would break the first `cargo run`
//! on a fresh machine; the gateway needs only the HTTP client the object store already
//! links. Runs on the cluster thread's tokio runtime, never on a shard.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use crate::cluster::ClusterError;

/// One etcd request may take this long before the next endpoint is tried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// A key and its value as etcd stores them, with the revisions that fence its writers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Vec<u8>,
    /// The revision that created the key (a new creation gets a new, larger one).
    pub create_revision: i64,
    pub mod_revision: i64,
    pub lease: i64,
}

/// What a compare-and-create found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Created {
    /// The key was absent and now holds the value, created at this revision.
    Yes { revision: i64 },
    /// The key exists: its current holder.
    Taken(KeyValue),
}

/// A client of one etcd cluster: each request goes to the first endpoint that answers.
#[derive(Clone)]
pub struct Etcd {
    http: reqwest::Client,
    endpoints: Vec<String>,
}

impl Etcd {
    pub fn new(
        endpoints: Vec<String>,
        tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    ) -> Result<Etcd, ClusterError> {
        assert!(
            !endpoints.is_empty(),
            "cluster mode names its etcd endpoints"
        );
        let https = endpoints.iter().all(|e| e.starts_with("https://"));
        assert_eq!(
            https,
            tls.is_some(),
            "https endpoints come with their TLS settings"
        );
        let mut builder = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(REQUEST_TIMEOUT);
        if let Some(tls) = tls {
            builder = builder.tls_backend_preconfigured((*tls).clone());
        }
        let http = builder
            .build()
            .map_err(|e| ClusterError::Etcd(format!("building the HTTP client: {e}")))?;
        Ok(Etcd { http, endpoints })
    }

    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// A lease of `ttl_s` seconds: its id.
    pub async fn grant(&self, ttl_s: i64) -> Result<i64, ClusterError> {
        let reply = self.call("lease/grant", json!({ "TTL": ttl_s })).await?;
        int(&reply["ID"]).ok_or_else(|| malformed("lease/grant", &reply))
    }

    /// Renews a lease: the seconds it has left, 0 when it already expired.
    pub async fn keep_alive(&self, lease: i64) -> Result<i64, ClusterError> {
        let reply = self
            .call("lease/keepalive", json!({ "ID": lease.to_string() }))
            .await?;
        Ok(int(&reply["result"]["TTL"]).unwrap_or(0))
    }

    /// Ends a lease now: its keys go at once.
    pub async fn revoke(&self, lease: i64) -> Result<(), ClusterError> {
        match self
            .call("lease/revoke", json!({ "ID": lease.to_string() }))
            .await
        {
            Err(ClusterError::Etcd(why)) if why.contains("lease not found") => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Every key under `prefix`, and the store's revision they were read at.
    pub async fn range_prefix(&self, prefix: &str) -> Result<(i64, Vec<KeyValue>), ClusterError> {
        let body = json!({ "key": b64(prefix.as_bytes()), "range_end": b64(&prefix_end(prefix)) });
        let reply = self.call("kv/range", body).await?;
        let revision = int(&reply["header"]["revision"]).unwrap_or(0);
        let kvs = reply["kvs"].as_array().cloned().unwrap_or_default();
        let kvs = kvs.iter().map(key_value).collect::<Option<Vec<_>>>();
        Ok((revision, kvs.ok_or_else(|| malformed("kv/range", &reply))?))
    }

    /// Creates `key` with `value` under `lease` if no one holds it (a transaction comparing
    /// its create revision with 0), else reads its holder.
    pub async fn create(
        &self,
        key: &str,
        value: &[u8],
        lease: i64,
    ) -> Result<Created, ClusterError> {
        let k = b64(key.as_bytes());
        let body = json!({
            "compare": [{ "key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0" }],
            "success": [{ "request_put": { "key": k, "value": b64(value), "lease": lease.to_string() } }],
            "failure": [{ "request_range": { "key": k } }],
        });
        let reply = self.call("kv/txn", body).await?;
        if reply["succeeded"].as_bool() == Some(true) {
            let revision =
                int(&reply["header"]["revision"]).ok_or_else(|| malformed("kv/txn", &reply))?;
            return Ok(Created::Yes { revision });
        }
        let held = &reply["responses"][0]["response_range"]["kvs"][0];
        match key_value(held) {
            Some(kv) => Ok(Created::Taken(kv)),
            // Gone between the compare and the read: the caller tries again.
            None => Ok(Created::Taken(KeyValue {
                key: key.to_string(),
                value: Vec::new(),
                create_revision: 0,
                mod_revision: 0,
                lease: 0,
            })),
        }
    }

    /// Deletes `key` if it still holds the creation at `create_revision` (a holder never
    /// removes a successor's key).
    pub async fn delete_if_created_at(
        &self,
        key: &str,
        create_revision: i64,
    ) -> Result<(), ClusterError> {
        let compare = [Compare::CreatedAt(key.to_string(), create_revision)];
        self.txn(&compare, &[Op::Delete(key.to_string())])
            .await
            .map(|_| ())
    }

    /// One transaction: every op of `then` if every comparison holds, else none. Whether
    /// it was applied.
    pub async fn txn(&self, compare: &[Compare], then: &[Op]) -> Result<bool, ClusterError> {
        Ok(self.txn_at(compare, then).await?.is_some())
    }

    /// As `txn`: the revision its writes were made at, None when a comparison failed.
    pub async fn txn_at(
        &self,
        compare: &[Compare],
        then: &[Op],
    ) -> Result<Option<i64>, ClusterError> {
        let body = json!({
            "compare": compare.iter().map(Compare::to_json).collect::<Vec<_>>(),
            "success": then.iter().map(Op::to_json).collect::<Vec<_>>(),
        });
        let reply = self.call("kv/txn", body).await?;
        if reply["succeeded"].as_bool() != Some(true) {
            return Ok(None);
        }
        let revision =
            int(&reply["header"]["revision"]).ok_or_else(|| malformed("kv/txn", &reply))?;
        Ok(Some(revision))
    }

    /// One request, tried on each endpoint in turn until one answers.
    async fn call(&self, path: &str, body: Value) -> Result<Value, ClusterError> {
        let mut failures = Vec::new();
        for endpoint in &self.endpoints {
            let url = format!("{endpoint}/v3/{path}");
            let sent = self.http.post(&url).body(body.to_string()).send().await;
            let response = match sent {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{endpoint}: {}", with_causes(&e)));
                    continue;
                }
            };
            let status = response.status();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| ClusterError::Etcd(format!("{url}: {e}")))?;
            let reply: Value = serde_json::from_slice(&bytes)
                .map_err(|e| ClusterError::Etcd(format!("{url}: not JSON ({e})")))?;
            if !status.is_success() || reply.get("error").is_some() {
                let why = reply["error"]
                    .as_str()
                    .or(reply["message"].as_str())
                    .unwrap_or("");
                return Err(ClusterError::Etcd(format!("{url}: {status} {why}")));
            }
            return Ok(reply);
        }
        Err(ClusterError::Unreachable {
            endpoints: self.endpoints.join(","),
            why: failures.join("; "),
        })
    }
}

/// An error and every cause under it (a TLS refusal sits three levels below "error
/// sending request"), so the log says why a connection failed.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text = format!("{text}: {said}");
        }
        cause = c.source();
    }
    text
}

/// A condition of a transaction, on one key's revisions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compare {
    /// The key was created at this revision (0: the key is absent).
    CreatedAt(String, i64),
    /// The key was last changed at this revision (0: the key is absent).
    ModifiedAt(String, i64),
}

impl Compare {
    fn to_json(&self) -> Value {
        match self {
            Compare::CreatedAt(key, rev) => {
                json!({ "key": b64(key.as_bytes()), "target": "CREATE", "result": "EQUAL", "create_revision": rev.to_string() })
            }
            Compare::ModifiedAt(key, rev) => {
                json!({ "key": b64(key.as_bytes()), "target": "MOD", "result": "EQUAL", "mod_revision": rev.to_string() })
            }
        }
    }
}

/// A write of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    Put(String, Vec<u8>),
    /// A new value that keeps the key's lease (etcd's ignore_lease), so a key held by a
    /// node's lease still ends with it.
    PutKeepLease(String, Vec<u8>),
    Delete(String),
    /// Every key starting with the prefix.
    DeletePrefix(String),
}

impl Op {
    fn to_json(&self) -> Value {
        match self {
            Op::Put(key, value) => {
                json!({ "request_put": { "key": b64(key.as_bytes()), "value": b64(value) } })
            }
            Op::PutKeepLease(key, value) => json!({ "request_put": {
                "key": b64(key.as_bytes()), "value": b64(value), "ignore_lease": true } }),
            Op::Delete(key) => json!({ "request_delete_range": { "key": b64(key.as_bytes()) } }),
            Op::DeletePrefix(prefix) => json!({ "request_delete_range": {
                "key": b64(prefix.as_bytes()), "range_end": b64(&prefix_end(prefix)) } }),
        }
    }
}

fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// The end of the range of keys starting with `prefix` (etcd's prefix rule: the last byte
/// plus one).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// An int64 as the gateway writes it (a string), or a number.
fn int(v: &Value) -> Option<i64> {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_i64())
}

fn key_value(v: &Value) -> Option<KeyValue> {
    let key = B64.decode(v["key"].as_str()?).ok()?;
    let value = match v["value"].as_str() {
        Some(s) => B64.decode(s).ok()?,
        None => Vec::new(),
    };
    Some(KeyValue {
        key: String::from_utf8(key).ok()?,
        value,
        create_revision: int(&v["create_revision"]).unwrap_or(0),
        mod_revision: int(&v["mod_revision"]).unwrap_or(0),
        lease: int(&v["lease"]).unwrap_or(0),
    })
}

fn malformed(what: &str, reply: &Value) -> ClusterError {
    ClusterError::Etcd(format!("{what}: unexpected reply {reply}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_ends_after_every_key_with_the_prefix() {
        assert_eq!(prefix_end("/c/brokers/"), b"/c/brokers0".to_vec());
        assert_eq!(prefix_end("a\u{7f}"), b"a\x80".to_vec());
    }

    #[test]
    fn the_gateway_s_key_values_decode() {
        let v = json!({ "key": b64(b"/c/b/1"), "value": b64(b"{}"), "create_revision": "7", "mod_revision": "9", "lease": "42" });
        let kv = key_value(&v).unwrap();
        assert_eq!(
            (kv.key.as_str(), kv.value.as_slice()),
            ("/c/b/1", &b"{}"[..])
        );
        assert_eq!((kv.create_revision, kv.mod_revision, kv.lease), (7, 9, 42));
        assert_eq!(int(&json!("-1")), Some(-1));
        assert!(key_value(&json!({ "key": "not base64!" })).is_none());
    }
}
