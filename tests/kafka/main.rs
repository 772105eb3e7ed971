//! Integration tests of a real server process over Kafka's wire protocol: produce, fetch, admin, groups, transactions.
//! One binary (one link of the crate) for the group; each module was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod kafka_admin_e2e;
mod kafka_admin_wire;
mod kafka_group_join;
mod kafka_groups_e2e;
mod kafka_wire;
mod txn_produce_rules_e2e;
