//! The cluster's security state in etcd (cluster mode): the SCRAM credentials and the ACLs,
//! each one value under `security/<name>` in the text format of the file a single node keeps
//! (FORMAT.md), so every node authenticates the same users and enforces the same ACLs.
//! `security::changes` computes a change; this file only stores it, as a compare-and-swap on
//! the revision the change was computed from, so two nodes changing at once never lose
//! either change. Every node installs a newer value from its next view. A node's own files
//! seed the cluster's values once, when etcd holds none (bootstrapping users before the
//! first start, as `kafka-storage format --add-scram` does).

use std::collections::BTreeMap;

use crate::cluster::etcd::{Compare, Etcd, KeyValue, Op};
use crate::cluster::{ClusterError, Keys};

/// One value as etcd holds it, with the revision that last changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredValue {
    pub value: Vec<u8>,
    pub revision: i64,
}

/// What a compare-and-swap did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Swapped {
    /// The value is stored, at this revision.
    Done { revision: i64 },
    /// Another write came first: what etcd holds now (None: no value).
    Raced { now: Option<StoredValue> },
}

/// The security values among a view's keys, by name.
pub fn from_keys(keys: &Keys, kvs: &[KeyValue]) -> BTreeMap<String, StoredValue> {
    let prefix = keys.security_values();
    let values = kvs.iter().filter_map(|kv| {
        let name = kv.key.strip_prefix(&prefix)?;
        Some((name.to_string(), stored(kv)))
    });
    values.collect()
}

/// The value at exactly `key` among a view's keys.
pub fn one_from_keys(key: &str, kvs: &[KeyValue]) -> Option<StoredValue> {
    kvs.iter().find(|kv| kv.key == key).map(stored)
}

fn stored(kv: &KeyValue) -> StoredValue {
    StoredValue {
        value: kv.value.clone(),
        revision: kv.mod_revision,
    }
}

/// Replaces the value at `key` (a shared value's: `Keys::shared`) with `value` if it was
/// last changed at `expected` (0: if there is none).
pub async fn swap(
    etcd: &Etcd,
    key: &str,
    expected: i64,
    value: Vec<u8>,
) -> Result<Swapped, ClusterError> {
    assert!(expected >= 0, "a revision, or 0 for no value");
    let key = key.to_string();
    let guard = match expected {
        0 => Compare::CreatedAt(key.clone(), 0),
        at => Compare::ModifiedAt(key.clone(), at),
    };
    if let Some(revision) = etcd
        .txn_at(&[guard], &[Op::Put(key.clone(), value)])
        .await?
    {
        assert!(revision > expected, "a write makes a newer revision");
        return Ok(Swapped::Done { revision });
    }
    let (_, kvs) = etcd.range_prefix(&key).await?;
    let now = kvs.iter().find(|kv| kv.key == key).map(stored);
    Ok(Swapped::Raced { now })
}

/// Stores each of this node's own values (`(name, text)`) the cluster does not hold yet;
/// where it holds one already, the node's own file is not used, and the log says so when
/// the two differ.
pub async fn seed(etcd: &Etcd, keys: &Keys, own: &[(String, String)]) -> Result<(), ClusterError> {
    for (name, text) in own {
        match swap(etcd, &keys.security(name), 0, text.as_bytes().to_vec()).await? {
            Swapped::Done { revision } => {
                tracing::info!(%name, revision, "this node's security file seeded the cluster's copy in etcd")
            }
            Swapped::Raced { now }
                if now.as_ref().map(|v| v.value.as_slice()) != Some(text.as_bytes()) =>
            {
                tracing::warn!(%name, "this node's security file differs from the cluster's copy in etcd; the cluster's is used")
            }
            Swapped::Raced { .. } => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_takes_only_the_security_values() {
        let keys = Keys::new("c");
        let kv = |key: String, value: &[u8], mod_revision: i64| KeyValue {
            key,
            value: value.to_vec(),
            create_revision: 3,
            mod_revision,
            lease: 0,
        };
        let kvs = [
            kv(keys.security("acls"), b"# acls", 9),
            kv(keys.topic("acls"), b"{}", 4),
            kv(keys.security("scram-credentials"), b"# users", 7),
        ];
        let values = from_keys(&keys, &kvs);
        let names: Vec<(&str, i64)> = values
            .iter()
            .map(|(n, v)| (n.as_str(), v.revision))
            .collect();
        assert_eq!(names, [("acls", 9), ("scram-credentials", 7)]);
        assert_eq!(values["acls"].value, b"# acls");
    }
}
