//! The remote tier's part in a topic's create and delete. Restore (Redpanda's topic
//! recovery, asked the same way: a CreateTopics carrying `remote.recovery=true`, which
//! `shardlog topics restore` sends): the controller reads the topic's description and each
//! partition's manifest, takes the manifests over as their writer, lays out each partition
//! as an empty log starting at the end of its remote tier (with the producers' snapshot),
//! then creates the topic as any other: every remote segment is served from the bucket,
//! and new records continue the offsets. Only what was not yet uploaded is lost. A new
//! tiered topic must find its name free in the bucket; a deleted one's objects are removed
//! in the background.

use crate::broker_error::BrokerError;
use crate::catalog::admin_host::{AdminHost, AdminResult};
use crate::log::partition_dir;
use crate::protocol::ErrorCode;
use crate::remote::restore::{delete_topic, read_topic, take_over, topic_in_bucket};
use crate::remote::{RemoteError, Tiering};

fn remote_err(topic: &str, e: RemoteError) -> BrokerError {
    match e {
        RemoteError::NotFound(_) => BrokerError::new(
            ErrorCode::UnknownTopic,
            format!("the bucket holds no tiered topic {topic:?} to restore"),
        ),
        other => other.to_broker(),
    }
}

/// Restores `name` from the bucket, with the bucket's partition count and configs (the
/// count a create asks is not the restore's to choose: Kafka clients send a default).
pub async fn restore_topic(
    host: &dyn AdminHost,
    tiering: Option<&Tiering>,
    name: String,
) -> AdminResult<()> {
    let Some(tiering) = tiering else {
        return Err(BrokerError::new(
            ErrorCode::InvalidConfig,
            "restoring a topic needs the server key remote.storage.url",
        ));
    };
    if host.topic(&name).is_some() {
        return Err(BrokerError::new(
            ErrorCode::TopicAlreadyExists,
            format!("topic {name:?} already exists here: restore is for a node that lost it"),
        ));
    }
    let topic = read_topic(&tiering.store, &name)
        .await
        .map_err(|e| remote_err(&name, e))?;
    for p in 0..topic.partitions {
        let restored = take_over(&tiering.store, &tiering.writer, &name, p)
            .await
            .map_err(|e| remote_err(&name, e))?;
        // The restored log continues the remote tier: its first offset is the tier's end.
        assert!(restored.next_offset >= 0);
        let dir = partition_dir(&host.settings().data_dir, &name, p);
        crate::log::tiering::seed_restored(
            host.storage(),
            &dir,
            restored.next_offset,
            restored.producer_snapshot,
        )
        .await
        .map_err(|e| {
            BrokerError::new(
                ErrorCode::of(&e),
                format!("laying out {}: {e}", dir.display()),
            )
        })?;
        tracing::info!(topic = %name, partition = p, next_offset = restored.next_offset, "partition restored from the bucket");
    }
    let configs = topic.create_configs();
    let partitions = topic.partitions as i32;
    crate::catalog::admin::create_everywhere(
        host,
        name,
        partitions,
        configs,
        crate::catalog::admin::Origin::Restored,
    )
    .await
}

/// Refuses a new tiered topic (or tiering turned on) while the bucket still holds data
/// under its name: a deleted incarnation not yet removed, or another node's topic. Adopting
/// it would serve old records as the new topic's.
pub async fn ensure_bucket_free(tiering: Option<&Tiering>, name: &str) -> Result<(), BrokerError> {
    let Some(tiering) = tiering else {
        return Ok(()); // refused later, with the missing server key named
    };
    let held = topic_in_bucket(&tiering.store, name)
        .await
        .map_err(|e| e.to_broker())?;
    match held {
        false => Ok(()),
        true => Err(BrokerError::new(
            ErrorCode::TopicAlreadyExists,
            format!("the bucket still holds a tiered topic {name:?} (a deleted one being removed, or another node's): restore it with `topics restore`, or retry once it is gone"),
        )),
    }
}

/// After a tiered topic's deletion: its remote tier is removed in the background (Kafka
/// deletes remote segments with the topic), so the deletion does not wait for the store.
pub fn delete_in_background(tiering: Option<&Tiering>, name: &str) {
    let Some(tiering) = tiering.cloned() else {
        return;
    };
    let name = name.to_string();
    crate::tasks::spawn(async move {
        match delete_topic(&tiering.store, &name).await {
            Ok(n) => tracing::info!(topic = %name, objects = n, "remote tier of a deleted topic removed"),
            Err(e) => tracing::warn!(topic = %name, error = %e, "removing a deleted topic's remote tier failed; objects are left in the bucket"),
        }
    })
    .detach();
}
