//! A read replica (`remote.read.replica=true`, Redpanda's remote read replicas): another
//! node on the same bucket serves every tiered topic it finds there, read-only, from the
//! object store. The controller adds the bucket's topics (their description: partitions
//! and configs) every `remote.upload.interval.ms`; each partition's manifest is read again
//! on the same interval (`remote/uploader.rs`), so new segments become readable as the
//! writer uploads them.

use std::rc::Rc;
use std::time::Duration;

use glommio::channels::local_channel::LocalReceiver;

use crate::broker_error::BrokerError;
use crate::catalog::admin_host::AdminHost;
use crate::io::deadline::before;
use crate::remote::{restore, Tiering};

/// On the controller of a read replica: every interval, the bucket's tiered topics this
/// node does not have yet are added (read-only). Each shard's partitions re-read their
/// manifests in the uploader loop.
pub async fn sync_topics_loop(
    host: Rc<dyn AdminHost>,
    tiering: Tiering,
    shutdown: LocalReceiver<()>,
) {
    let every = Duration::from_millis(host.settings().remote_upload_interval_ms);
    loop {
        if let Err(e) = sync_topics(&*host, &tiering).await {
            tracing::warn!(error = %e, "read replica: listing the bucket's topics failed; retrying");
        }
        if before(every, shutdown.recv()).await.is_some() {
            return;
        }
    }
}

async fn sync_topics(host: &dyn AdminHost, tiering: &Tiering) -> Result<(), BrokerError> {
    let names = restore::list_topics(&tiering.store)
        .await
        .map_err(|e| e.to_broker())?;
    for name in names.into_iter().filter(|n| host.topic(n).is_none()) {
        let topic = restore::read_topic(&tiering.store, &name)
            .await
            .map_err(|e| e.to_broker())?;
        let configs = topic.create_configs();
        let partitions = topic.partitions as i32;
        crate::catalog::admin::create_everywhere(
            host,
            name.clone(),
            partitions,
            configs,
            crate::catalog::admin::Origin::New,
        )
        .await?;
        tracing::info!(topic = %name, partitions = topic.partitions, "read replica: serving a topic of the bucket");
    }
    Ok(())
}
