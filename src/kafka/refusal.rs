//! A Kafka error code with the message that explains it: what a response carries for a
//! refused request, topic, partition or resource. Built where a request is checked, taken
//! apart only where the response is built.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i16,
    pub message: String,
}

impl Refusal {
    pub fn new(code: i16, message: impl Into<String>) -> Self {
        let refusal = Refusal {
            code,
            message: message.into(),
        };
        // A refusal is an error: NONE (0) would tell the client all went well.
        assert_ne!(refusal.code, 0, "a refusal with no error code: {refusal:?}");
        refusal
    }
}

/// Kafka's code for a refused topic config change (a request error is a config's).
pub fn config_code(code: crate::protocol::ErrorCode) -> i16 {
    match code {
        crate::protocol::ErrorCode::InvalidRequest => super::errors::INVALID_CONFIG,
        other => super::errors::kafka_code(other, true),
    }
}
