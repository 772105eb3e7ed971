//! The security state a shard enforces, in its two kinds (SCRAM credentials, ACLs): how a
//! change turns one state into the next (pure, so the node's file and the cluster's copy in
//! etcd share it), and what each shard has installed, with the etcd revision it came from,
//! so a view older than a change this node made never undoes it.

use std::cell::Cell;

use crate::broker_error::BrokerError;
use crate::security::acl::AclBinding;
use crate::security::acl_store::{self, AclChange, AclStore};
use crate::security::authorizer;
use crate::security::credentials::{self, Changes, CredentialStore};

/// A change a client asks for; it runs on the controller shard.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SecurityChange {
    Credentials(Changes),
    Acls(AclChange),
}

/// What a change did: for an ACL change, the bindings each removal filter removed, in
/// order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityOutcome {
    Done,
    AclsRemoved(Vec<Vec<AclBinding>>),
}

/// Why a stored value cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unreadable {
    #[error("not UTF-8 text")]
    NotText,
    #[error(transparent)]
    Credentials(#[from] credentials::Unacceptable),
    #[error(transparent)]
    Acls(#[from] crate::security::acl::InvalidAcl),
}

/// The two kinds of security state, each stored whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityKind {
    Credentials,
    Acls,
}

/// One kind's whole state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityValue {
    Credentials(CredentialStore),
    Acls(AclStore),
}

/// A state made durable, for every shard to install: `revision` is the etcd revision that
/// stored it (cluster mode), 0 for the node's own file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityState {
    pub value: SecurityValue,
    pub revision: i64,
}

impl SecurityKind {
    /// Its file's name in `__shardlog_meta`, which is also its etcd key's last part.
    pub fn name(self) -> &'static str {
        match self {
            SecurityKind::Credentials => credentials::FILE,
            SecurityKind::Acls => acl_store::FILE,
        }
    }

    pub fn from_name(name: &str) -> Option<SecurityKind> {
        [SecurityKind::Credentials, SecurityKind::Acls]
            .into_iter()
            .find(|k| k.name() == name)
    }

    fn index(self) -> usize {
        match self {
            SecurityKind::Credentials => 0,
            SecurityKind::Acls => 1,
        }
    }
}

impl SecurityValue {
    pub fn kind(&self) -> SecurityKind {
        match self {
            SecurityValue::Credentials(_) => SecurityKind::Credentials,
            SecurityValue::Acls(_) => SecurityKind::Acls,
        }
    }

    /// Its file's text (FORMAT.md), also what etcd holds in cluster mode.
    pub fn encode(&self) -> String {
        match self {
            SecurityValue::Credentials(store) => store.encode(),
            SecurityValue::Acls(store) => store.encode(),
        }
    }

    /// A value as stored (the file's text, or etcd's value).
    pub fn decode(kind: SecurityKind, stored: &[u8]) -> Result<SecurityValue, Unreadable> {
        let text = std::str::from_utf8(stored).map_err(|_| Unreadable::NotText)?;
        Ok(match kind {
            SecurityKind::Credentials => SecurityValue::Credentials(CredentialStore::decode(text)?),
            SecurityKind::Acls => SecurityValue::Acls(AclStore::decode(text)?),
        })
    }

    /// No users, or no ACLs.
    pub fn empty(kind: SecurityKind) -> SecurityValue {
        match kind {
            SecurityKind::Credentials => SecurityValue::Credentials(CredentialStore::default()),
            SecurityKind::Acls => SecurityValue::Acls(AclStore::default()),
        }
    }

    /// What this shard enforces now.
    pub fn installed(kind: SecurityKind) -> SecurityValue {
        match kind {
            SecurityKind::Credentials => SecurityValue::Credentials(credentials::snapshot()),
            SecurityKind::Acls => SecurityValue::Acls(authorizer::snapshot()),
        }
    }
}

impl SecurityChange {
    pub fn kind(&self) -> SecurityKind {
        match self {
            SecurityChange::Credentials(_) => SecurityKind::Credentials,
            SecurityChange::Acls(_) => SecurityKind::Acls,
        }
    }

    /// The state this change makes of `current` (of its kind), and what it did.
    pub fn applied_to(
        &self,
        current: SecurityValue,
    ) -> Result<(SecurityValue, SecurityOutcome), BrokerError> {
        assert_eq!(
            current.kind(),
            self.kind(),
            "a change applies to its own kind"
        );
        match (self, current) {
            (SecurityChange::Credentials(changes), SecurityValue::Credentials(store)) => Ok((
                SecurityValue::Credentials(store.with(changes)),
                SecurityOutcome::Done,
            )),
            (SecurityChange::Acls(change), SecurityValue::Acls(mut store)) => {
                let removed = store.apply(change)?;
                assert_eq!(removed.len(), change.remove.len(), "one answer per filter");
                Ok((
                    SecurityValue::Acls(store),
                    SecurityOutcome::AclsRemoved(removed),
                ))
            }
            _ => unreachable!("kinds checked above"),
        }
    }
}

thread_local! {
    /// The etcd revision of each kind this shard installed (0: the node's own file).
    static INSTALLED_REVISION: Cell<[i64; 2]> = const { Cell::new([0; 2]) };
}

/// The etcd revision of what this shard enforces (0: the node's own file, or nothing).
pub fn installed_revision(kind: SecurityKind) -> i64 {
    INSTALLED_REVISION.get()[kind.index()]
}

fn note_installed_revision(kind: SecurityKind, revision: i64) {
    let mut revisions = INSTALLED_REVISION.get();
    revisions[kind.index()] = revision;
    INSTALLED_REVISION.set(revisions);
}

/// Installs `state` on this shard unless a newer one of the cluster's is installed already:
/// whether it was.
pub fn install(state: SecurityState) -> bool {
    let kind = state.value.kind();
    if state.revision > 0 && state.revision <= installed_revision(kind) {
        return false;
    }
    note_installed_revision(kind, state.revision);
    match state.value {
        SecurityValue::Credentials(store) => credentials::install(store),
        SecurityValue::Acls(store) => authorizer::install(store),
    }
    assert_eq!(installed_revision(kind), state.revision);
    true
}

/// Installs a value of the cluster's (`name`'s text as etcd holds it, at `revision`) if it is
/// newer than this shard's. One that cannot be read is logged and skipped: the shard keeps
/// enforcing what it has rather than nothing.
pub fn install_stored(name: &str, text: &[u8], revision: i64) {
    let Some(kind) = SecurityKind::from_name(name) else {
        return tracing::debug!(%name, "an unknown security value in etcd; skipped");
    };
    if revision <= installed_revision(kind) {
        return;
    }
    match SecurityValue::decode(kind, text) {
        Ok(value) => {
            install(SecurityState { value, revision });
        }
        Err(why) => {
            tracing::error!(%name, revision, %why, "the cluster's security value in etcd cannot be read; this node keeps enforcing its previous one");
            // Seen, so it is not decoded and logged again at every view.
            note_installed_revision(kind, revision);
        }
    }
}
