//! Operations the controller shard runs (topic and config changes, producer ids): run here
//! on the controller, or sent to it.

use std::rc::Rc;

use crate::shard::messages::{OpResult, ShardOp};
use crate::shard::runtime::{Shard, CONTROLLER};

impl Shard {
    /// A producer id never handed out before, from the controller's persisted blocks.
    pub async fn allocate_producer_id(self: &Rc<Self>) -> OpResult {
        if self.id == CONTROLLER {
            self.allocate_producer_id_here().await
        } else {
            self.remote(CONTROLLER, ShardOp::AllocateProducerId).await
        }
    }

    pub async fn create_topic(
        self: &Rc<Self>,
        name: String,
        partitions: i32,
        configs: Vec<(String, String)>,
    ) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::create(self, name, partitions, configs).await
        } else {
            self.remote(
                CONTROLLER,
                ShardOp::CreateTopic {
                    name,
                    partitions,
                    configs,
                },
            )
            .await
        }
    }

    /// Creates an internal topic (`internal_topics.rs`) on the controller.
    pub async fn create_internal_topic(self: &Rc<Self>, name: String) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::create_internal(self, name).await
        } else {
            let op = ShardOp::CreateInternalTopic { name };
            self.remote(CONTROLLER, op).await
        }
    }

    /// Grows a topic to `count` partitions, on the controller.
    pub async fn create_partitions(self: &Rc<Self>, name: String, count: i32) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::create_partitions(self, name, count).await
        } else {
            let op = ShardOp::CreatePartitions { name, count };
            self.remote(CONTROLLER, op).await
        }
    }

    pub async fn delete_topic(self: &Rc<Self>, name: String) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::delete(self, name).await
        } else {
            self.remote(CONTROLLER, ShardOp::DeleteTopic { name }).await
        }
    }

    pub async fn alter_configs(
        self: &Rc<Self>,
        name: String,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    ) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::alter(self, name, set, delete).await
        } else {
            let op = ShardOp::AlterConfigs { name, set, delete };
            self.remote(CONTROLLER, op).await
        }
    }

    /// Alters the dynamic broker configs, on the controller.
    pub async fn alter_broker_configs(
        self: &Rc<Self>,
        scope: crate::catalog::broker_defaults::Scope,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    ) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::alter_broker(self, scope, set, delete).await
        } else {
            let op = ShardOp::AlterBrokerConfigs { scope, set, delete };
            self.remote(CONTROLLER, op).await
        }
    }

    /// A producer id from the controller's persisted blocks (`catalog/producer_ids.rs`).
    pub(super) async fn allocate_producer_id_here(&self) -> OpResult {
        // One allocator: blocks are only consistent if a single shard hands ids out.
        assert_eq!(self.id, CONTROLLER, "producer ids come from the controller");
        let block = self.config.producer_id_block_size;
        let dir = &self.config.data_dir;
        let id = crate::catalog::producer_ids::allocate(&*self.storage, dir, block).await?;
        Ok(crate::shard::messages::OpOk::ProducerId(id))
    }
}
