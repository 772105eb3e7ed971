//! The ACLs the server enforces, kept in `__shardlog_meta/acls` (FORMAT.md) and replaced
//! atomically like the credentials; each shard holds an indexed copy it reads at start and
//! the controller replaces after each durable change (CreateAcls, DeleteAcls).
//!
//! File: a header line, then one ACL per line, fields separated by one space: resource type,
//! pattern type, operation, permission (kafka-acls' names), then base64 of the resource
//! name, the principal and the host.

use std::collections::BTreeSet;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::acl::{
    AccessEntry, AclBinding, AclFilter, InvalidAcl, Operation, PatternType, Permission,
    ResourcePattern, ResourceType,
};
use super::meta_file::{self, StoreError};

const HEADER: &str = "# shardlog ACLs v1";
pub const FILE: &str = "acls";
/// ACLs one server holds: every check reads them, and every change rewrites the file.
pub const MAX_ACLS: usize = 100_000;

/// One change: bindings to add (validated) and filters whose matches are removed.
#[derive(Debug, Clone, Default)]
pub struct AclChange {
    pub add: Vec<AclBinding>,
    pub remove: Vec<AclFilter>,
}

/// A change that would leave more than `MAX_ACLS` bindings.
#[derive(Debug, thiserror::Error)]
#[error("a server holds at most {MAX_ACLS} ACLs; the change would leave {0}")]
pub struct TooManyAcls(pub usize);

impl From<TooManyAcls> for crate::broker_error::BrokerError {
    fn from(e: TooManyAcls) -> Self {
        Self::new(crate::protocol::ErrorCode::InvalidRequest, e.to_string())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclStore {
    bindings: BTreeSet<AclBinding>,
}

impl AclStore {
    pub fn iter(&self) -> impl Iterator<Item = &AclBinding> {
        self.bindings.iter()
    }

    pub fn len(&self) -> usize {
        self.bindings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    /// Adds a validated binding; false when it was there already (adding is idempotent).
    pub fn add(&mut self, binding: AclBinding) -> bool {
        debug_assert!(binding.validate().is_ok());
        self.bindings.insert(binding)
    }

    /// Applies `change` (removals first, then additions): what each filter removed, in
    /// order. Refused whole, changing nothing, if it would leave more than `MAX_ACLS`.
    pub fn apply(&mut self, change: &AclChange) -> Result<Vec<Vec<AclBinding>>, TooManyAcls> {
        let mut next = self.clone();
        let removed: Vec<Vec<AclBinding>> = change
            .remove
            .iter()
            .map(|f| next.remove_matching(f))
            .collect();
        for b in &change.add {
            next.add(b.clone());
        }
        if next.len() > MAX_ACLS {
            return Err(TooManyAcls(next.len()));
        }
        assert_eq!(
            removed.len(),
            change.remove.len(),
            "one removal list per filter"
        );
        *self = next;
        Ok(removed)
    }

    /// Removes what `filter` matches, returning it.
    pub fn remove_matching(&mut self, filter: &AclFilter) -> Vec<AclBinding> {
        let gone: Vec<AclBinding> = self
            .bindings
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect();
        let before = self.bindings.len();
        for b in &gone {
            self.bindings.remove(b);
        }
        // What is returned is exactly what went: each was held once.
        assert_eq!(self.bindings.len() + gone.len(), before);
        gone
    }

    pub fn matching(&self, filter: &AclFilter) -> Vec<AclBinding> {
        self.bindings
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect()
    }

    pub fn encode(&self) -> String {
        let mut out = format!("{HEADER}\n");
        for b in &self.bindings {
            let (r, e) = (&b.resource, &b.entry);
            out.push_str(&format!(
                "{} {} {} {} {} {} {}\n",
                r.kind,
                r.pattern,
                e.operation,
                e.permission,
                B64.encode(&r.name),
                B64.encode(&e.principal),
                B64.encode(&e.host)
            ));
        }
        out
    }

    pub fn decode(text: &str) -> Result<Self, InvalidAcl> {
        let lines = meta_file::data_lines(text, HEADER)
            .ok_or_else(|| InvalidAcl("not a shardlog ACL file (bad header)".into()))?;
        let mut store = AclStore::default();
        for (n, line) in lines {
            let binding = decode_line(line).map_err(|e| InvalidAcl(format!("line {n}: {e}")))?;
            store.add(binding);
        }
        Ok(store)
    }

    /// Reads the file in `meta_dir` (blocking: the offline tool and start-up). No file: none.
    pub fn read(meta_dir: &Path) -> Result<Self, StoreError> {
        meta_file::read(meta_dir, FILE, Self::decode)
    }

    /// Replaces the file in `meta_dir` atomically (blocking: the offline tool).
    pub fn write(&self, meta_dir: &Path) -> Result<(), StoreError> {
        let text = self.encode();
        assert_eq!(Self::decode(&text).as_ref(), Ok(self));
        meta_file::write(meta_dir, FILE, &text)
    }
}

fn decode_line(line: &str) -> Result<AclBinding, InvalidAcl> {
    let bad = |what: &str| InvalidAcl(format!("bad {what}"));
    let f: Vec<&str> = line.split(' ').collect();
    let [kind, pattern, operation, permission, name, principal, host] = f[..] else {
        return Err(bad("line: expected 7 fields"));
    };
    let text = |s: &str, what: &str| {
        let bytes = B64.decode(s).map_err(|_| bad(what))?;
        String::from_utf8(bytes).map_err(|_| bad(what))
    };
    let binding = AclBinding {
        resource: ResourcePattern {
            kind: ResourceType::from_name(kind).ok_or_else(|| bad("resource type"))?,
            name: text(name, "resource name")?,
            pattern: PatternType::from_name(pattern).ok_or_else(|| bad("pattern type"))?,
        },
        entry: AccessEntry {
            principal: text(principal, "principal")?,
            host: text(host, "host")?,
            operation: Operation::from_name(operation).ok_or_else(|| bad("operation"))?,
            permission: Permission::from_name(permission).ok_or_else(|| bad("permission"))?,
        },
    };
    binding.validate()?;
    Ok(binding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_round_trips_and_refuses_what_it_cannot_read() {
        let mut store = AclStore::default();
        let b = AclBinding {
            resource: ResourcePattern {
                kind: ResourceType::Topic,
                name: "orders with space".into(),
                pattern: PatternType::Prefixed,
            },
            entry: AccessEntry {
                principal: "User:CN=alice,O=acme".into(),
                host: "*".into(),
                operation: Operation::Read,
                permission: Permission::Deny,
            },
        };
        assert!(store.add(b.clone()));
        assert!(!store.add(b.clone()), "adding twice keeps one");
        let text = store.encode();
        assert_eq!(AclStore::decode(&text), Ok(store.clone()));
        assert!(AclStore::decode("garbage").is_err());
        assert!(AclStore::decode(&text.replace("Read", "Reed")).is_err());
        assert_eq!(store.remove_matching(&AclFilter::any()), vec![b]);
        assert!(store.is_empty());
    }
}
