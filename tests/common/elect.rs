//! Kafka's ElectLeaders as a test asks it and reads its answer.

use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

/// An election of `election_type` (0 PREFERRED, 1 UNCLEAN) for `asked` (None: every
/// partition).
pub fn request(election_type: i8, asked: Option<&[(&str, &[i32])]>) -> ElectLeadersRequest {
    let topics = asked.map(|a| {
        let each = a.iter().map(|(t, ps)| {
            TopicPartitions::default()
                .with_topic(TopicName(StrBytes::from_string(t.to_string())))
                .with_partitions(ps.to_vec())
        });
        each.collect()
    });
    ElectLeadersRequest::default()
        .with_election_type(election_type)
        .with_topic_partitions(topics)
        .with_timeout_ms(30_000)
}

/// The answer as (top error, [(topic, partition, error)]).
pub fn results(r: &ElectLeadersResponse) -> (i16, Vec<(String, i32, i16)>) {
    let mut out = Vec::new();
    for t in &r.replica_election_results {
        for p in &t.partition_result {
            out.push((t.topic.0.to_string(), p.partition_id, p.error_code));
        }
    }
    (r.error_code, out)
}
