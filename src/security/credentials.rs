//! The SCRAM credentials the server checks logins against: per (user, mechanism) a salt,
//! StoredKey, ServerKey and iteration count, never a password (FORMAT.md). Kept in
//! `__shardlog_meta/scram-credentials`, replaced atomically (write, fsync, rename), so a
//! change is whole or absent after a kill -9. Each shard holds a copy it reads at start.
//!
//! File: a header line, then one line per credential, fields separated by one space:
//! mechanism name, iterations, then base64 of the user name, the salt, StoredKey, ServerKey.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::meta_file::{self, StoreError};
use super::scram::{Credential, Mechanism, MAX_ITERATIONS, MIN_ITERATIONS};

const HEADER: &str = "# shardlog SCRAM credentials v1";
pub const FILE: &str = "scram-credentials";
/// Longest user name stored (Kafka's strings are int16-length).
pub const MAX_USER: usize = 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialStore {
    by_user: BTreeMap<(String, Mechanism), Credential>,
}

/// The file in the server's meta directory (`__shardlog_meta`).
pub fn file_path(meta_dir: &Path) -> PathBuf {
    meta_dir.join(FILE)
}

/// Why a credential cannot be stored (Kafka's UNACCEPTABLE_CREDENTIAL cases), or why the
/// credentials file cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unacceptable {
    #[error("a user name must have 1 to {max} bytes, not {0}", max = MAX_USER)]
    UserName(usize),
    #[error("iterations must be {min} to {max}, not {0}", min = MIN_ITERATIONS, max = MAX_ITERATIONS)]
    Iterations(u32),
    #[error("not a shardlog credentials file (bad header)")]
    BadHeader,
    #[error("line {line}: {what}")]
    BadLine { line: usize, what: String },
}

pub fn check(user: &str, iterations: u32) -> Result<(), Unacceptable> {
    if user.is_empty() || user.len() > MAX_USER {
        return Err(Unacceptable::UserName(user.len()));
    }
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        return Err(Unacceptable::Iterations(iterations));
    }
    Ok(())
}

impl CredentialStore {
    pub fn is_empty(&self) -> bool {
        self.by_user.is_empty()
    }

    pub fn get(&self, user: &str, mechanism: Mechanism) -> Option<&Credential> {
        self.by_user.get(&(user.to_string(), mechanism))
    }

    /// Every (user, mechanism, iterations), in order.
    pub fn list(&self) -> Vec<(String, Mechanism, u32)> {
        self.by_user
            .iter()
            .map(|((u, m), c)| (u.clone(), *m, c.iterations))
            .collect()
    }

    pub fn set(&mut self, user: &str, mechanism: Mechanism, credential: Credential) {
        // Callers check first (AlterUserScramCredentials, the file, the offline tool).
        assert!(
            check(user, credential.iterations).is_ok(),
            "an unchecked credential"
        );
        self.by_user
            .insert((user.to_string(), mechanism), credential);
    }

    /// Whether there was one to remove.
    pub fn remove(&mut self, user: &str, mechanism: Mechanism) -> bool {
        self.by_user
            .remove(&(user.to_string(), mechanism))
            .is_some()
    }

    pub fn encode(&self) -> String {
        let mut out = format!("{HEADER}\n");
        for ((user, m), c) in &self.by_user {
            out.push_str(&format!(
                "{} {} {} {} {} {}\n",
                m.name(),
                c.iterations,
                B64.encode(user),
                B64.encode(&c.salt),
                B64.encode(&c.stored_key),
                B64.encode(&c.server_key)
            ));
        }
        out
    }

    pub fn decode(text: &str) -> Result<Self, Unacceptable> {
        let lines = meta_file::data_lines(text, HEADER).ok_or(Unacceptable::BadHeader)?;
        let mut store = CredentialStore::default();
        for (n, line) in lines {
            let bad = |why: &str| Unacceptable::BadLine {
                line: n,
                what: why.to_string(),
            };
            let f: Vec<&str> = line.split(' ').collect();
            let [mechanism, iterations, user, salt, stored, server] = f[..] else {
                return Err(bad("expected 6 fields"));
            };
            let mechanism = Mechanism::from_name(mechanism).ok_or_else(|| bad("mechanism"))?;
            let iterations: u32 = iterations.parse().map_err(|_| bad("iterations"))?;
            let b64 = |s: &str, what: &str| B64.decode(s).map_err(|_| bad(what));
            let user = String::from_utf8(b64(user, "user")?).map_err(|_| bad("user"))?;
            check(&user, iterations).map_err(|e| bad(&e.to_string()))?;
            let credential = Credential {
                salt: b64(salt, "salt")?,
                stored_key: b64(stored, "stored key")?,
                server_key: b64(server, "server key")?,
                iterations,
            };
            store.set(&user, mechanism, credential);
        }
        Ok(store)
    }

    /// Reads the file in `meta_dir` (blocking; for the offline tool and start-up). No file:
    /// no users.
    pub fn read(meta_dir: &Path) -> Result<Self, StoreError> {
        meta_file::read(meta_dir, FILE, Self::decode)
    }

    /// Replaces the file in `meta_dir` atomically (blocking; the offline tool holds the data
    /// directory's lock).
    pub fn write(&self, meta_dir: &Path) -> Result<(), StoreError> {
        let text = self.encode();
        assert_eq!(Self::decode(&text).as_ref(), Ok(self));
        meta_file::write(meta_dir, FILE, &text)
    }
}

thread_local! {
    /// This shard's copy, read at start.
    static SHARD_STORE: RefCell<CredentialStore> = RefCell::new(CredentialStore::default());
}

/// Installs this shard's copy (at start).
pub fn install(store: CredentialStore) {
    SHARD_STORE.with_borrow_mut(|s| *s = store);
}

/// This shard's copy (what DescribeUserScramCredentials reports and changes start from).
pub fn snapshot() -> CredentialStore {
    SHARD_STORE.with_borrow(|s| s.clone())
}

/// A validated change of the credentials (AlterUserScramCredentials).
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub deletions: Vec<(String, Mechanism)>,
    pub upsertions: Vec<(String, Mechanism, Credential)>,
}

impl CredentialStore {
    /// The store with `changes` applied (deletions first, as Kafka applies them).
    pub fn with(&self, changes: &Changes) -> CredentialStore {
        let mut next = self.clone();
        for (user, m) in &changes.deletions {
            next.remove(user, *m);
        }
        for (user, m, c) in &changes.upsertions {
            next.set(user, *m, c.clone());
        }
        // Upserts come after deletions: each one stands, even for a user deleted too.
        assert!(changes
            .upsertions
            .iter()
            .all(|(u, m, _)| next.get(u, *m).is_some()));
        next
    }
}

/// The credential a login checks against, from this shard's copy.
pub fn lookup(user: &str, mechanism: Mechanism) -> Option<Credential> {
    SHARD_STORE.with_borrow(|s| s.get(user, mechanism).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_round_trips_and_refuses_what_it_cannot_read() {
        let mut store = CredentialStore::default();
        store.set(
            "alice smith",
            Mechanism::Sha256,
            Credential::new(Mechanism::Sha256, "correct-horse", 4096),
        );
        store.set(
            "bob",
            Mechanism::Sha512,
            Credential::new(Mechanism::Sha512, "battery-staple", 8192),
        );
        let text = store.encode();
        let encoded = |s: &str| B64.encode(s);
        for secret in ["correct-horse", "battery-staple"] {
            assert!(
                !text.contains(secret) && !text.contains(&encoded(secret)),
                "no password is stored"
            );
        }
        assert_eq!(CredentialStore::decode(&text), Ok(store.clone()));
        assert_eq!(
            store.list(),
            vec![
                ("alice smith".into(), Mechanism::Sha256, 4096),
                ("bob".into(), Mechanism::Sha512, 8192)
            ]
        );
        assert!(CredentialStore::decode("garbage").is_err());
        let bad_iterations = text.replace(" 8192 ", " 100 ");
        assert!(CredentialStore::decode(&bad_iterations).is_err());
        let short = format!("{HEADER}\nSCRAM-SHA-256 4096 YQ==\n");
        assert!(CredentialStore::decode(&short).is_err());
        assert!(store.remove("bob", Mechanism::Sha512));
        assert!(!store.remove("bob", Mechanism::Sha512));
    }
}
