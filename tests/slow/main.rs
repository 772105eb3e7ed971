//! Integration tests of the slow tier: cluster mode on etcd, the idle soak, the crash loop, the Python client suites, tiered storage on S3, the offsets integrity kills.
//! One binary (one link of the crate) for the group; each module was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod cluster_clients_e2e;
mod cluster_coordinators_e2e;
mod cluster_decommission_e2e;
mod cluster_e2e;
mod cluster_etcd_tls_e2e;
mod cluster_faults_e2e;
mod cluster_internode_security_e2e;
mod cluster_operations_e2e;
mod cluster_rack_reads_e2e;
mod cluster_reassign_e2e;
mod cluster_replication_e2e;
mod cluster_security_e2e;
mod cluster_tiered_e2e;
mod cluster_topics_e2e;
mod crash_loop;
mod idle_e2e;
mod kafka_clients_e2e;
mod kafka_txn_e2e;
mod offsets_integrity_e2e;
mod tiered_e2e;
