//! Operations the controller shard runs (topic and config changes, producer ids): run here
//! on the controller, or sent to it. The topic lifecycle itself is `catalog::admin`; this
//! shard hosts it (`catalog::admin_host::AdminHost`) and applies its changes.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::catalog::admin_host::{AdminHost, AdminRequest, CatalogChange};
use crate::catalog::service::{NextProducerId, ProducerIds, TopicAdmin};
use crate::partition_ops::{OpOk, OpResult};
use crate::protocol::ErrorCode;
use crate::security::changes::{SecurityChange, SecurityOutcome};
use crate::security::service::SecurityChanges;
use crate::shard::runtime::{Shard, CONTROLLER};

impl Shard {
    /// A producer id never handed out before, from the controller's persisted blocks.
    pub async fn allocate_producer_id(self: &Rc<Self>) -> Result<i64, BrokerError> {
        self.call::<ProducerIds>(CONTROLLER, NextProducerId).await?
    }

    /// Runs a client's topic or config change on the controller.
    pub async fn admin(self: &Rc<Self>, request: AdminRequest) -> OpResult {
        self.call::<TopicAdmin>(CONTROLLER, request).await??;
        Ok(OpOk::Done)
    }

    /// This shard as the host of the topic lifecycle (the checks of a validate-only request
    /// run on any shard; the changes on the controller only).
    pub(crate) fn admin_host(self: &Rc<Self>) -> impl AdminHost {
        super::hosts::ShardHost(self.clone())
    }

    /// Changes the SCRAM credentials or the ACLs, on the controller.
    pub async fn security_change(
        self: &Rc<Self>,
        change: SecurityChange,
    ) -> Result<SecurityOutcome, BrokerError> {
        self.call::<SecurityChanges>(CONTROLLER, change).await?
    }

    /// Creates an internal topic (`internal_topics.rs`) on the controller.
    pub async fn create_internal_topic(self: &Rc<Self>, name: String) -> OpResult {
        self.admin(AdminRequest::CreateInternalTopic { name }).await
    }

    /// Applies one step of an admin change to this shard's catalog and partitions.
    pub(super) async fn apply_catalog_change(&self, change: CatalogChange) -> OpResult {
        match change {
            CatalogChange::OpenPartitions {
                meta,
                from,
                restored,
            } => self.open_new_partitions(&meta, from, restored).await,
            CatalogChange::PublishTopic(meta) => {
                self.topics.borrow_mut().insert(meta.name.clone(), meta);
                Ok(OpOk::Done)
            }
            CatalogChange::RemoveTopic(meta) => self.remove_owned(&meta).await,
            CatalogChange::RemovePartitions { meta, from } => {
                self.discard_partitions(&meta, from).await
            }
            CatalogChange::AlterTopic(meta) => self.alter_owned(meta).await,
            CatalogChange::SetBrokerDefaults(defaults) => self.set_broker_defaults(defaults).await,
        }
    }

    /// The controller's next block of producer ids after `next` (`catalog/producer_ids.rs`),
    /// durable before it is returned.
    pub(super) async fn claim_producer_id_block(
        &self,
        next: Option<i64>,
    ) -> Result<(i64, i64), BrokerError> {
        // One allocator: blocks are only consistent if a single shard hands ids out.
        assert_eq!(self.id, CONTROLLER, "producer ids come from the controller");
        let size = self.config.producer_id_block_size;
        let Some(link) = self.cluster_link() else {
            let dir = &self.config.data_dir;
            return crate::catalog::producer_ids::file_block(&*self.storage, dir, size, next).await;
        };
        // In cluster mode every node's blocks come from one etcd key.
        let start = link.claim_producer_ids(size).await.map_err(|e| {
            let why = format!("claiming producer ids in etcd: {e}");
            BrokerError::new(ErrorCode::NotReady, why)
        })?;
        Ok((start, start + size))
    }
}
