//! Tiered storage (Kafka's KIP-405, Redpanda's tiered storage): sealed segments of topics
//! with `remote.storage.enable=true` are copied, as Kafka's own files, to an object store
//! (S3, GCS, Azure, or a local directory) through the `object_store` crate; a manifest per
//! partition is the commit point of every change; reads below the local log's start are
//! served from there. This module knows the store, the manifests, the remote reads, the
//! uploader, restore and read replicas; the shard hosts them (`host.rs`, and
//! `catalog::admin_host` for topic changes) and routes partition operations to both tiers
//! (`shard/services/tiering.rs`).

pub mod chunks;
pub mod disk_cache;
pub mod error;
pub mod expire;
pub mod host;
pub mod keys;
pub mod manifest;
pub mod partition;
pub mod read;
pub mod read_replica;
pub mod rebuild;
pub mod restore;
pub mod segment_files;
pub mod store;
pub mod tiered_ops;
pub mod topic_lifecycle;
pub mod upload;
pub mod uploader;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use error::RemoteError;
pub use partition::RemoteLog;
pub use store::RemoteStore;

/// The object store and this node's writer id, on every shard when tiering is on.
#[derive(Clone, Debug)]
pub struct Tiering {
    pub store: RemoteStore,
    pub writer: String,
}

use object_store::path::Path as ObjectPath;
use object_store::{ClientConfigKey, ObjectStore, RetryConfig};

/// Retries inside one request: a few, quickly; the upload loop retries with its own
/// backoff, and a remote read fails fast with a retriable error rather than hang.
fn retry() -> RetryConfig {
    RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 3,
        retry_timeout: Duration::from_secs(10),
    }
}

/// Request and connect timeouts, set over what the environment configured (replacing the
/// client options would drop settings such as `AWS_ALLOW_HTTP`).
const CLIENT_TIMEOUTS: [(ClientConfigKey, &str); 2] = [
    (ClientConfigKey::Timeout, "10s"),
    (ClientConfigKey::ConnectTimeout, "5s"),
];

/// `scheme://bucket/prefix` split into (bucket URL, prefix).
fn split_url(url: &str) -> Result<(String, ObjectPath), RemoteError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| RemoteError::Config(format!("{url:?} is not scheme://bucket/prefix")))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(RemoteError::Config(format!("{url:?} names no bucket")));
    }
    Ok((
        format!("{scheme}://{bucket}"),
        ObjectPath::from(prefix.trim_matches('/')),
    ))
}

/// The object store `remote.storage.url` names, with credentials and region from the
/// standard environment variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`), never from topic
/// configs; `endpoint` (S3-compatible stores: MinIO, Ceph RGW) overrides the provider's.
pub fn open_store(url: &str, endpoint: &str) -> Result<RemoteStore, RemoteError> {
    // Two rustls providers are linked (ring for the listeners, aws-lc-rs through the HTTP
    // client): without a process default, rustls cannot choose and the client fails.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let bad = |e: object_store::Error| RemoteError::Config(format!("{url}: {e}"));
    if let Some(dir) = url.strip_prefix("file://") {
        let dir = Path::new(dir);
        crate::io::os::create_dir_all(dir)
            .map_err(|e| RemoteError::Config(format!("{url}: {e}")))?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir).map_err(bad)?;
        return start(Arc::new(store), ObjectPath::default());
    }
    let (bucket, prefix) = split_url(url)?;
    let store: Arc<dyn ObjectStore> = match url.split_once("://").map(|(s, _)| s) {
        Some("s3" | "s3a") => {
            use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
            let mut b = AmazonS3Builder::from_env()
                .with_url(&bucket)
                .with_retry(retry());
            if !endpoint.is_empty() {
                b = b.with_endpoint(endpoint);
            }
            for (k, v) in CLIENT_TIMEOUTS {
                b = b.with_config(AmazonS3ConfigKey::Client(k), v);
            }
            Arc::new(b.build().map_err(bad)?)
        }
        Some("gs") => {
            use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_url(&bucket)
                .with_retry(retry());
            for (k, v) in CLIENT_TIMEOUTS {
                b = b.with_config(GoogleConfigKey::Client(k), v);
            }
            Arc::new(b.build().map_err(bad)?)
        }
        Some("az" | "abfs" | "abfss" | "azure") => {
            use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_url(&bucket)
                .with_retry(retry());
            if !endpoint.is_empty() {
                b = b.with_endpoint(endpoint.to_string());
            }
            for (k, v) in CLIENT_TIMEOUTS {
                b = b.with_config(AzureConfigKey::Client(k), v);
            }
            Arc::new(b.build().map_err(bad)?)
        }
        _ => {
            return Err(RemoteError::Config(format!(
                "{url:?}: use s3://, gs://, az:// or file:///"
            )))
        }
    };
    start(store, prefix)
}

fn start(store: Arc<dyn ObjectStore>, prefix: ObjectPath) -> Result<RemoteStore, RemoteError> {
    RemoteStore::start(store, prefix)
        .map_err(|e| RemoteError::Config(format!("starting the object store's thread: {e}")))
}

/// This data directory's writer id (created at the first start with tiering): the
/// manifests it writes name it, and it refuses manifests naming another.
pub fn writer_id(data_dir: &Path) -> std::io::Result<String> {
    crate::io::os::read_or_create_id(&data_dir.join("remote-writer-id"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_split_into_bucket_and_prefix() {
        let (b, p) = super::split_url("s3://bkt/some/prefix/").unwrap();
        assert_eq!((b.as_str(), p.as_ref()), ("s3://bkt", "some/prefix"));
        let (b, p) = super::split_url("s3://bkt").unwrap();
        assert_eq!((b.as_str(), p.as_ref()), ("s3://bkt", ""));
        assert!(super::split_url("bkt").is_err());
        assert!(super::split_url("s3:///x").is_err());
    }
}
