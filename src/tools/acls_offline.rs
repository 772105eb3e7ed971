//! `shardlog acls --data-dir`: the ACL file of a stopped server's data directory (the tool
//! takes the directory's lock; a running server would not see the change).

use std::path::Path;

use super::acl_target::AclTarget;
use crate::catalog::data_dir::DataDirLock;
use crate::security::acl::{AclBinding, AclFilter};
use crate::security::acl_store::AclStore;

pub struct Offline {
    _lock: DataDirLock,
    meta_dir: std::path::PathBuf,
    store: AclStore,
}

impl Offline {
    pub fn open(data_dir: &Path) -> Result<Offline, String> {
        let lock = crate::catalog::data_dir::lock(data_dir)
            .map_err(|e| format!("{e} (stop the server first, or use --bootstrap-server)"))?;
        let meta_dir = data_dir.join(crate::catalog::topics::META_DIR);
        let store = AclStore::read(&meta_dir).map_err(|e| e.to_string())?;
        Ok(Offline {
            _lock: lock,
            meta_dir,
            store,
        })
    }

    fn save(&self) -> Result<(), String> {
        let dir = &self.meta_dir;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        self.store.write(dir).map_err(|e| e.to_string())
    }
}

impl AclTarget for Offline {
    fn create(&mut self, bindings: Vec<AclBinding>) -> Result<(), String> {
        for b in bindings {
            self.store.add(b);
        }
        self.save()
    }

    fn describe(&mut self, filter: &AclFilter) -> Result<Vec<AclBinding>, String> {
        Ok(self.store.matching(filter))
    }

    fn delete(&mut self, filters: Vec<AclFilter>) -> Result<Vec<AclBinding>, String> {
        let removed = filters
            .iter()
            .flat_map(|f| self.store.remove_matching(f))
            .collect();
        self.save()?;
        Ok(removed)
    }
}
