//! Who may connect: listeners and their security protocols (Kafka's `listeners`), SASL
//! authentication (SCRAM-SHA-256/512 and PLAIN), the stored SCRAM credentials, and what
//! each principal may do (Kafka's ACLs and authorizer).

pub mod acl;
pub mod acl_store;
pub mod authorizer;
pub mod changes;
pub mod client;
pub mod credentials;
pub mod listeners;
pub mod meta_file;
pub mod pem;
pub mod plain;
pub mod principal_mapping;
pub mod sasl_server;
pub mod scram;
pub mod scram_client;
pub mod service;
pub mod state;

pub use listeners::{KafkaListener, SecurityProtocol};

/// A SASL mechanism a listener may enable (`sasl.enabled.mechanisms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaslMechanism {
    Scram(scram::Mechanism),
    Plain,
}

impl SaslMechanism {
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Scram(m) => m.name(),
            SaslMechanism::Plain => "PLAIN",
        }
    }

    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        match name {
            "PLAIN" => Some(SaslMechanism::Plain),
            other => scram::Mechanism::from_name(other).map(SaslMechanism::Scram),
        }
    }
}

/// Kafka's principal of an authenticated user.
pub fn user_principal(user: &str) -> String {
    format!("User:{user}")
}

/// The principal of a connection that did not authenticate (PLAINTEXT).
pub const ANONYMOUS: &str = "User:ANONYMOUS";
