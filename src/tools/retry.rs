//! What a starting server answers for a moment (a coordinator loading its offsets
//! partition, a partition whose shard is still opening it) is retried until the tool's
//! `--timeout-ms`, as Kafka's AdminClient does, instead of ending the tool.

use std::time::{Duration, Instant};

use kafka_protocol::messages::ResponseKind;

use crate::kafka_codes::is_retriable;

/// Pause between tries.
const BACKOFF: Duration = Duration::from_millis(100);

/// Calls `call` until its reply carries no retriable error or `timeout` has passed since
/// the first try; the last reply (a retriable error is then the caller's to report).
pub fn until_settled<E>(
    timeout: Duration,
    mut call: impl FnMut() -> Result<ResponseKind, E>,
) -> Result<ResponseKind, E> {
    let deadline = Instant::now() + timeout;
    loop {
        let reply = call()?;
        match retriable_code(&reply) {
            Some(code) if Instant::now() + BACKOFF < deadline => {
                tracing::debug!(code, "retriable error; trying again");
                std::thread::sleep(BACKOFF);
            }
            _ => return Ok(reply),
        }
    }
}

/// The first retriable error code anywhere in a reply the tools read.
pub fn retriable_code(reply: &ResponseKind) -> Option<i16> {
    codes(reply).into_iter().find(|&c| is_retriable(c))
}

/// Every error code of a reply, top level first.
pub(super) fn codes(reply: &ResponseKind) -> Vec<i16> {
    match reply {
        ResponseKind::ListGroups(r) => vec![r.error_code],
        ResponseKind::DescribeGroups(r) => r.groups.iter().map(|g| g.error_code).collect(),
        ResponseKind::OffsetFetch(r) => {
            let groups = r.groups.iter().flat_map(|g| {
                let partitions = g.topics.iter().flat_map(|t| &t.partitions);
                std::iter::once(g.error_code).chain(partitions.map(|p| p.error_code))
            });
            let partitions = r.topics.iter().flat_map(|t| &t.partitions);
            std::iter::once(r.error_code)
                .chain(groups)
                .chain(partitions.map(|p| p.error_code))
                .collect()
        }
        ResponseKind::ListOffsets(r) => (r.topics.iter().flat_map(|t| &t.partitions))
            .map(|p| p.error_code)
            .collect(),
        ResponseKind::Metadata(r) => r
            .topics
            .iter()
            .flat_map(|t| {
                std::iter::once(t.error_code).chain(t.partitions.iter().map(|p| p.error_code))
            })
            .collect(),
        ResponseKind::DeleteGroups(r) => r.results.iter().map(|g| g.error_code).collect(),
        ResponseKind::OffsetDelete(r) => {
            let partitions = r.topics.iter().flat_map(|t| &t.partitions);
            std::iter::once(r.error_code)
                .chain(partitions.map(|p| p.error_code))
                .collect()
        }
        ResponseKind::OffsetCommit(r) => (r.topics.iter().flat_map(|t| &t.partitions))
            .map(|p| p.error_code)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::*;

    use super::*;

    #[test]
    fn a_loading_coordinator_is_retried_and_an_unknown_topic_is_not() {
        let loading =
            ResponseKind::DescribeGroups(DescribeGroupsResponse::default().with_groups(vec![
                describe_groups_response::DescribedGroup::default().with_error_code(14),
            ]));
        assert_eq!(retriable_code(&loading), Some(14));
        let unknown = ResponseKind::ListOffsets(ListOffsetsResponse::default().with_topics(vec![
            list_offsets_response::ListOffsetsTopicResponse::default().with_partitions(vec![
                list_offsets_response::ListOffsetsPartitionResponse::default().with_error_code(3),
            ]),
        ]));
        assert_eq!(retriable_code(&unknown), None);
        let mut tries = 0;
        let settled = until_settled::<()>(Duration::from_secs(5), || {
            tries += 1;
            Ok(if tries < 3 {
                loading.clone()
            } else {
                unknown.clone()
            })
        });
        assert_eq!((tries, settled), (3, Ok(unknown)));
    }
}
