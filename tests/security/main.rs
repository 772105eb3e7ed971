//! Integration tests of TLS, SASL, mTLS and ACLs on both listeners.
//! One binary (one link of the crate) for the group; each module was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod kafka_acl_e2e;
mod kafka_mtls_e2e;
mod kafka_sasl_e2e;
mod kafka_tls_e2e;
mod native_security_e2e;
