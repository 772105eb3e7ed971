//! A Kafka client pointed at the native listener: its first request (ApiVersions, with a
//! version the native protocol never had) would otherwise be answered as a native request
//! and read back as nonsense ("Unknown topic or partition: probably due to broker version <
//! 0.10"). It is recognised by its header and the connection is closed, with a log line
//! naming the Kafka listener it should use.

use bytes::Bytes;

use crate::protocol::{ApiKey, REQUEST_HEADER};

/// The client id of a frame that is a Kafka request and not a native one: the native API
/// of its key does not serve its version, and it decodes whole as a request Kafka's
/// listener serves.
pub fn kafka_client_id(frame: &Bytes) -> Option<String> {
    if frame.len() < REQUEST_HEADER {
        return None;
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let native_serves =
        ApiKey::from_i16(key).is_some_and(|k| (k.versions().0..=k.versions().1).contains(&version));
    if native_serves {
        return None;
    }
    crate::kafka::client_id_of_request(frame.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kafka_api_versions_request_is_told_from_a_native_one() {
        // Kafka ApiVersions v3 (a flexible header: client id, then tagged fields), correlation
        // id 1, client id "rdkafka", software name and version "a" and "1".
        let mut kafka = vec![0, 18, 0, 3, 0, 0, 0, 1, 0, 7];
        kafka.extend_from_slice(b"rdkafka");
        kafka.extend_from_slice(&[0, 2, b'a', 2, b'1', 0]);
        assert_eq!(
            kafka_client_id(&Bytes::from(kafka)).as_deref(),
            Some("rdkafka")
        );
        // Native DeleteGroup (18) v0: the native protocol's own.
        let native = Bytes::from(vec![0, 18, 0, 0, 0, 0, 0, 1, 0, 1, b'g']);
        assert_eq!(kafka_client_id(&native), None);
    }
}
