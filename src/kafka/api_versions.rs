//! What the Kafka listener advertises: an explicit table of APIs and versions (the
//! "advertise" column of kafka-wire.md §3), never the crate's `valid_versions()`, which is
//! wider than what its structs decode.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

/// (API, lowest version, highest version) served on the Kafka listener.
pub const ADVERTISED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 10),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 7),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::AddPartitionsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 3),
    (ApiKey::TxnOffsetCommit, 0, 3),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::WriteTxnMarkers, 1, 1),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
];

/// Kafka's UNSUPPORTED_VERSION.
const UNSUPPORTED_VERSION: i16 = 35;

pub fn is_advertised(key: ApiKey, version: i16) -> bool {
    ADVERTISED
        .iter()
        .any(|&(k, min, max)| k == key && (min..=max).contains(&version))
}

fn api_keys() -> Vec<ApiVersion> {
    ADVERTISED
        .iter()
        .map(|&(k, min, max)| {
            ApiVersion::default()
                .with_api_key(k as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect()
}

pub fn response() -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(api_keys())
}

/// The reply to an ApiVersions request of a version newer than we serve (KIP-511): its body
/// is not read, and the answer has the v0 layout (response header v0, error 35, the API
/// table), which every client can decode before retrying with a version from the table.
pub fn unsupported_version_frame(correlation_id: i32) -> Vec<u8> {
    let table = api_keys();
    let mut body = BytesMut::new();
    body.put_i32(correlation_id);
    body.put_i16(UNSUPPORTED_VERSION);
    body.put_i32(table.len() as i32);
    for v in &table {
        body.put_i16(v.api_key);
        body.put_i16(v.min_version);
        body.put_i16(v.max_version);
    }
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::Decodable;

    #[test]
    fn the_table_lies_within_what_the_crate_decodes() {
        for &(k, min, max) in ADVERTISED {
            let valid = k.valid_versions();
            assert!(
                valid.min <= min && max <= valid.max,
                "{k:?} {min}..={max} vs {valid:?}"
            );
        }
    }

    #[test]
    fn the_unsupported_version_reply_decodes_as_a_v0_response() {
        let frame = unsupported_version_frame(77);
        let mut body = bytes::Bytes::from(frame[4..].to_vec());
        assert_eq!(&body[..4], &77i32.to_be_bytes());
        let _ = bytes::Buf::get_i32(&mut body);
        let r = ApiVersionsResponse::decode(&mut body, 0).unwrap();
        assert_eq!(r.error_code, UNSUPPORTED_VERSION);
        assert_eq!(r.api_keys, api_keys());
        assert!(body.is_empty());
    }
}
