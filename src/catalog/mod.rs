//! The topic catalog: topic names and configs, partition ownership, the metadata files
//! that are the commit point of create, delete and alter, the data directory's lock and
//! start-up cleanup, the internal topics' rules, the producer id blocks, and the topic
//! lifecycle the controller runs (`admin.rs`, hosted through `admin_host.rs`).

pub mod admin;
pub mod admin_host;
pub mod broker_defaults;
pub mod data_dir;
pub mod error;
pub(crate) mod internal_topics;
pub mod producer_ids;
pub mod service;
pub mod topics;
