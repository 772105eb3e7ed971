//! The two places `shardlog acls` reads and changes ACLs: a live server (`acls_live.rs`)
//! or a stopped server's data directory (`acls_offline.rs`).

use crate::security::acl::{AclBinding, AclFilter};

/// Where the tool reads and changes ACLs.
pub trait AclTarget {
    fn create(&mut self, bindings: Vec<AclBinding>) -> Result<(), String>;
    fn describe(&mut self, filter: &AclFilter) -> Result<Vec<AclBinding>, String>;
    fn delete(&mut self, filters: Vec<AclFilter>) -> Result<Vec<AclBinding>, String>;
}
