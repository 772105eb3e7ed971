//! Why a Kafka frame could not be encoded, decoded or exchanged, typed. The kafka-protocol
//! crate reports its own failures as `anyhow::Error`; they are carried as their text
//! (`Codec`), so no `anyhow` type crosses this crate's interfaces.

use crate::security::scram::ScramError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KafkaWireError {
    /// The kafka-protocol crate could not encode or decode a message.
    #[error("{0}")]
    Codec(String),
    #[error("a {0}-byte response does not fit a Kafka frame")]
    TooLarge(usize),
    /// A Fetch reply's records placeholder was not where the encoder should have put it.
    #[error("records placeholder {index} {why}")]
    Placeholder { index: usize, why: &'static str },
    #[error("frame size {declared} vs {actual} bytes")]
    FrameSize { declared: i32, actual: usize },
    #[error("{0} bytes after the body")]
    Trailing(usize),
    #[error("correlation id {got}, expected {expected}")]
    Correlation { got: i32, expected: i32 },
    #[error("{key}: no answer within {ms} ms (raise it with --timeout-ms)")]
    Timeout { key: String, ms: u128 },
    #[error("{key}: the connection was closed (is this the Kafka listener?)")]
    Closed { key: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("the server refused {mechanism} (it offers {offered:?})")]
    MechanismRefused {
        mechanism: &'static str,
        offered: Vec<String>,
    },
    #[error("SASL authentication as {user:?} failed (error {code}): {message}")]
    AuthenticationFailed {
        user: String,
        code: i16,
        message: String,
    },
    #[error(transparent)]
    Scram(#[from] ScramError),
    #[error("unexpected answer: {0}")]
    Unexpected(String),
}

impl KafkaWireError {
    /// A failure the kafka-protocol crate reported, with its whole chain of causes.
    pub fn codec(e: impl std::fmt::Display) -> Self {
        KafkaWireError::Codec(format!("{e:#}"))
    }
}

impl From<std::io::Error> for KafkaWireError {
    fn from(source: std::io::Error) -> Self {
        KafkaWireError::Io {
            context: "kafka connection".to_string(),
            source,
        }
    }
}
