//! Kafka's StandardAuthorizer decision, over each shard's own indexed copy of the ACLs
//! (no lock: the controller installs a new copy on every shard after a durable change).
//!
//! A request is allowed when the authorizer is off, the principal is a super user, or an
//! ALLOW applies and no DENY does (DENY wins). ACLs apply by literal name, the literal
//! `*`, and every PREFIXED pattern the name starts with; to the principal or `User:*`;
//! from the client's IP or `*`. When no ACL at all names the resource, the answer is
//! `allow.everyone.if.no.acl.found`.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use super::acl::{AccessEntry, Operation, PatternType, Permission, ResourceType, WILDCARD};
use super::acl_store::AclStore;

/// The authorizer's server settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// `authorizer.enable`: off, everything is allowed (as with no authorizer in Kafka).
    pub enabled: bool,
    /// `super.users`: principals that bypass the ACLs.
    pub super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found`.
    pub allow_everyone_if_no_acl_found: bool,
}

/// Every principal of the user type.
const ANY_USER: &str = "User:*";

/// The ACLs of one resource type, indexed for the check.
#[derive(Debug, Default)]
struct TypeIndex {
    literal: HashMap<String, Vec<AccessEntry>>,
    prefixed: HashMap<String, Vec<AccessEntry>>,
    /// The lengths of the prefixes above, so a check probes only those.
    prefix_lengths: BTreeSet<usize>,
}

/// One shard's ACLs: the store (what DescribeAcls lists) and its index.
#[derive(Debug, Default)]
pub struct AclIndex {
    store: AclStore,
    by_type: HashMap<ResourceType, TypeIndex>,
}

impl AclIndex {
    pub fn new(store: AclStore) -> AclIndex {
        let mut by_type: HashMap<ResourceType, TypeIndex> = HashMap::new();
        for b in store.iter() {
            let index = by_type.entry(b.resource.kind).or_default();
            let map = match b.resource.pattern {
                PatternType::Literal => &mut index.literal,
                PatternType::Prefixed => {
                    index.prefix_lengths.insert(b.resource.name.len());
                    &mut index.prefixed
                }
            };
            map.entry(b.resource.name.clone())
                .or_default()
                .push(b.entry.clone());
        }
        // Every binding is indexed once: a check sees each ACL, none twice.
        let indexed: usize = (by_type.values())
            .flat_map(|i| i.literal.values().chain(i.prefixed.values()))
            .map(Vec::len)
            .sum();
        assert_eq!(indexed, store.len(), "ACLs indexed vs held");
        AclIndex { store, by_type }
    }

    /// Every entry whose pattern covers the named resource.
    fn applicable<'a>(
        &'a self,
        kind: ResourceType,
        name: &'a str,
    ) -> impl Iterator<Item = &'a AccessEntry> + 'a {
        let index = self.by_type.get(&kind);
        let literal = index.into_iter().flat_map(move |i| {
            let exact = i.literal.get(name);
            let wildcard = (name != WILDCARD)
                .then(|| i.literal.get(WILDCARD))
                .flatten();
            exact.into_iter().chain(wildcard)
        });
        let prefixed = index.into_iter().flat_map(move |i| {
            i.prefix_lengths
                .iter()
                .filter_map(move |&n| name.get(..n).and_then(|p| i.prefixed.get(p)))
        });
        literal.chain(prefixed).flatten()
    }

    /// The ACL decision for one principal (after the super-user check).
    fn decide(&self, who: &Who<'_>, op: Operation, kind: ResourceType, name: &str) -> Decision {
        let mut decision = Decision::NoAcl;
        for entry in self.applicable(kind, name) {
            if decision == Decision::NoAcl {
                decision = Decision::Denied;
            }
            if !who.is_named_by(entry) {
                continue;
            }
            match entry.permission {
                Permission::Deny if entry.operation.denies(op) => return Decision::Denied,
                Permission::Allow if entry.operation.allows(op) => decision = Decision::Allowed,
                _ => {}
            }
        }
        decision
    }

    /// KIP-679: whether `op` is allowed on some resource of `kind` (an idempotent producer
    /// may write with WRITE on any topic instead of IDEMPOTENT_WRITE on the cluster).
    fn decide_any(&self, who: &Who<'_>, op: Operation, kind: ResourceType) -> Decision {
        let Some(index) = self.by_type.get(&kind) else {
            return Decision::NoAcl;
        };
        let entries = || {
            index
                .literal
                .values()
                .chain(index.prefixed.values())
                .flatten()
        };
        let wildcard_denied = index.literal.get(WILDCARD).into_iter().flatten().any(|e| {
            e.permission == Permission::Deny && e.operation.denies(op) && who.is_named_by(e)
        });
        let allowed = entries().any(|e| {
            e.permission == Permission::Allow && e.operation.allows(op) && who.is_named_by(e)
        });
        match allowed && !wildcard_denied {
            true => Decision::Allowed,
            false => Decision::Denied,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Allowed,
    Denied,
    /// No ACL names the resource at all.
    NoAcl,
}

/// The principal and client address a check is for.
pub struct Who<'a> {
    pub principal: &'a str,
    /// The client's IP address as text (`*` entries match any).
    pub host: &'a str,
}

impl Who<'_> {
    fn is_named_by(&self, e: &AccessEntry) -> bool {
        (e.principal == self.principal || e.principal == ANY_USER)
            && (e.host == WILDCARD || e.host == self.host)
    }
}

thread_local! {
    /// This shard's ACLs, read at start and replaced by the controller.
    static SHARD_ACLS: RefCell<Rc<AclIndex>> = RefCell::new(Rc::new(AclIndex::default()));
}

/// Installs this shard's copy.
pub fn install(store: AclStore) {
    SHARD_ACLS.with_borrow_mut(|s| *s = Rc::new(AclIndex::new(store)));
}

/// This shard's ACLs as stored (what DescribeAcls lists and a change starts from).
pub fn snapshot() -> AclStore {
    SHARD_ACLS.with_borrow(|s| s.store.clone())
}

impl AuthorizerConfig {
    fn bypasses(&self, who: &Who<'_>) -> bool {
        !self.enabled || self.super_users.iter().any(|s| s == who.principal)
    }

    fn verdict(&self, decision: Decision) -> bool {
        match decision {
            Decision::Allowed => true,
            Decision::Denied => false,
            Decision::NoAcl => self.allow_everyone_if_no_acl_found,
        }
    }

    /// Whether `who` may do `op` on the named resource.
    pub fn authorize(&self, who: &Who<'_>, op: Operation, kind: ResourceType, name: &str) -> bool {
        if self.bypasses(who) {
            return true;
        }
        let decision = SHARD_ACLS.with_borrow(|acls| acls.decide(who, op, kind, name));
        self.verdict(decision)
    }

    /// Whether `who` may do `op` on at least one resource of `kind` (KIP-679).
    pub fn authorize_any(&self, who: &Who<'_>, op: Operation, kind: ResourceType) -> bool {
        if self.bypasses(who) {
            return true;
        }
        let decision = SHARD_ACLS.with_borrow(|acls| acls.decide_any(who, op, kind));
        self.verdict(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::acl::{AclBinding, ResourcePattern};

    fn acl(
        kind: ResourceType,
        name: &str,
        pattern: PatternType,
        principal: &str,
        op: Operation,
        permission: Permission,
    ) -> AclBinding {
        AclBinding {
            resource: ResourcePattern {
                kind,
                name: name.into(),
                pattern,
            },
            entry: AccessEntry {
                principal: principal.into(),
                host: "*".into(),
                operation: op,
                permission,
            },
        }
    }

    fn config() -> AuthorizerConfig {
        AuthorizerConfig {
            enabled: true,
            super_users: vec!["User:admin".into()],
            allow_everyone_if_no_acl_found: false,
        }
    }

    const ALICE: Who<'static> = Who {
        principal: "User:alice",
        host: "10.0.0.1",
    };
    const BOB: Who<'static> = Who {
        principal: "User:bob",
        host: "10.0.0.2",
    };

    #[test]
    fn decisions_follow_kafkas_rules() {
        use Operation::*;
        use PatternType::*;
        use Permission::*;
        use ResourceType::*;
        let mut store = AclStore::default();
        store.add(acl(Topic, "orders", Literal, "User:alice", Read, Allow));
        store.add(acl(Topic, "pay", Prefixed, "User:*", Write, Allow));
        store.add(acl(Topic, "payroll", Literal, "User:bob", All, Deny));
        store.add(acl(Group, "*", Literal, "User:alice", Read, Allow));
        install(store);
        let c = config();
        assert!(c.authorize(&ALICE, Read, Topic, "orders"));
        assert!(
            c.authorize(&ALICE, Describe, Topic, "orders"),
            "READ implies DESCRIBE"
        );
        assert!(!c.authorize(&ALICE, Write, Topic, "orders"));
        assert!(
            !c.authorize(&BOB, Read, Topic, "orders"),
            "ACLs for others deny"
        );
        assert!(
            c.authorize(&BOB, Write, Topic, "payments"),
            "prefix, any user"
        );
        assert!(!c.authorize(&BOB, Write, Topic, "payroll"), "DENY wins");
        assert!(c.authorize(&ALICE, Read, Group, "billing"), "wildcard");
        assert!(
            !c.authorize(&ALICE, Read, Topic, "unnamed"),
            "no ACL, default deny"
        );
        let admin = Who {
            principal: "User:admin",
            host: "1.2.3.4",
        };
        assert!(c.authorize(&admin, Delete, Topic, "orders"), "super user");
        let open = AuthorizerConfig {
            allow_everyone_if_no_acl_found: true,
            ..config()
        };
        assert!(open.authorize(&ALICE, Read, Topic, "unnamed"));
        assert!(
            !open.authorize(&BOB, Read, Topic, "orders"),
            "named resources stay shut"
        );
        assert!(
            c.authorize_any(&BOB, Write, Topic),
            "KIP-679 via the prefix"
        );
        assert!(!c.authorize_any(&ALICE, Alter, Topic));
        let off = AuthorizerConfig::default();
        assert!(off.authorize(&BOB, Write, Topic, "payroll"));
    }

    #[test]
    fn hosts_are_matched_exactly_or_by_wildcard() {
        let mut b = acl(
            ResourceType::Topic,
            "t",
            PatternType::Literal,
            "User:alice",
            Operation::Read,
            Permission::Allow,
        );
        b.entry.host = "10.0.0.1".into();
        let mut store = AclStore::default();
        store.add(b);
        install(store);
        let c = config();
        assert!(c.authorize(&ALICE, Operation::Read, ResourceType::Topic, "t"));
        let elsewhere = Who {
            principal: "User:alice",
            host: "10.0.0.9",
        };
        assert!(!c.authorize(&elsewhere, Operation::Read, ResourceType::Topic, "t"));
    }
}
