//! consumer-groups on the native listener: the Kafka requests the tool makes (ListGroups,
//! DescribeGroups, OffsetFetch, ListOffsets, Metadata, DeleteGroups, OffsetDelete,
//! OffsetCommit) carried by their native counterparts (PROTOCOL.md, keys 1, 6, 14-18 and 24),
//! their answers given back in Kafka's shapes and codes, so the tool has one logic for
//! both listeners.

use std::time::Duration;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::native_blocking::{CallError, NativeBlocking};
use crate::kafka_codes::{self as k, kafka_code};
use crate::protocol::{ErrorCode, Request, ResponseBody};

/// What the tool calls: the Kafka listener itself, or this adapter.
pub trait GroupsApi {
    fn call(&mut self, key: ApiKey, version: i16, r: &RequestKind) -> Result<ResponseKind, String>;
}

impl GroupsApi for crate::kafka::blocking_client::BlockingClient {
    fn call(&mut self, key: ApiKey, version: i16, r: &RequestKind) -> Result<ResponseKind, String> {
        crate::kafka::blocking_client::BlockingClient::call(self, key, version, r)
            .map_err(|e| e.to_string())
    }
}

pub struct NativeGroups(NativeBlocking);

impl NativeGroups {
    pub fn connect(addr: &str, timeout: Duration) -> Result<Self, String> {
        NativeBlocking::connect(addr, timeout).map(NativeGroups)
    }

    /// Connects under the listener's security protocol.
    pub fn connect_secure(
        addr: &str,
        security: &crate::security::client::ClientSecurity,
        timeout: Duration,
    ) -> Result<Self, String> {
        NativeBlocking::connect_secure(addr, security, timeout).map(NativeGroups)
    }

    /// Whether the server is a node of a cluster (its controller has an epoch): there the
    /// groups live on their coordinators, which only Kafka's API names.
    pub fn in_cluster(&mut self) -> bool {
        let asked = Request::ClusterMetadata {
            topics: Some(Vec::new()),
        };
        matches!(self.ask(asked), Ok(Ok(ResponseBody::ClusterMetadata(m))) if m.controller_epoch > 0)
    }

    /// A native call whose server error is an answer (`Err(code)`), not a failure.
    fn ask(&mut self, request: Request) -> Result<Result<ResponseBody, ErrorCode>, String> {
        match self.0.call(&request) {
            Ok(body) => Ok(Ok(body)),
            Err(CallError::Server(code, _)) => Ok(Err(code)),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn text(s: &StrBytes) -> String {
    s.to_string()
}

fn str_bytes(s: String) -> StrBytes {
    StrBytes::from_string(s)
}

fn unexpected(body: impl std::fmt::Debug) -> String {
    format!("unexpected native reply {body:?}")
}

impl GroupsApi for NativeGroups {
    fn call(&mut self, _: ApiKey, _: i16, r: &RequestKind) -> Result<ResponseKind, String> {
        match r {
            RequestKind::ListGroups(r) => self.list_groups(r).map(ResponseKind::ListGroups),
            RequestKind::DescribeGroups(r) => {
                self.describe_groups(r).map(ResponseKind::DescribeGroups)
            }
            RequestKind::OffsetFetch(r) => self.offset_fetch(r).map(ResponseKind::OffsetFetch),
            RequestKind::ListOffsets(r) => self.list_offsets(r).map(ResponseKind::ListOffsets),
            RequestKind::Metadata(r) => self.metadata(r).map(ResponseKind::Metadata),
            RequestKind::DeleteGroups(r) => self.delete_groups(r).map(ResponseKind::DeleteGroups),
            RequestKind::OffsetDelete(r) => self.offset_delete(r).map(ResponseKind::OffsetDelete),
            RequestKind::OffsetCommit(r) => self.offset_commit(r).map(ResponseKind::OffsetCommit),
            other => Err(format!("{other:?} has no native counterpart")),
        }
    }
}

impl NativeGroups {
    /// Kafka filters by state on the server (case-insensitively); natively the tool does.
    fn list_groups(&mut self, r: &ListGroupsRequest) -> Result<ListGroupsResponse, String> {
        let groups = match self.ask(Request::ListGroups)? {
            Ok(ResponseBody::ListGroups(groups)) => groups,
            other => return Err(unexpected(other)),
        };
        let wanted = |state: &str| {
            r.states_filter.is_empty()
                || r.states_filter
                    .iter()
                    .any(|s| s.as_str().eq_ignore_ascii_case(state))
        };
        let listed = groups
            .into_iter()
            .filter(|(_, _, state)| wanted(state))
            .map(|(group, protocol_type, state)| {
                list_groups_response::ListedGroup::default()
                    .with_group_id(GroupId(str_bytes(group)))
                    .with_protocol_type(str_bytes(protocol_type))
                    .with_group_state(str_bytes(state))
            })
            .collect();
        Ok(ListGroupsResponse::default().with_groups(listed))
    }

    fn describe_groups(
        &mut self,
        r: &DescribeGroupsRequest,
    ) -> Result<DescribeGroupsResponse, String> {
        let mut described = Vec::with_capacity(r.groups.len());
        for group in &r.groups {
            let info = match self.ask(Request::DescribeGroup { group: text(group) })? {
                Ok(ResponseBody::DescribeGroup(info)) => info,
                other => return Err(unexpected(other)),
            };
            let members = info
                .members
                .into_iter()
                .map(|(id, client, host, assignment)| {
                    describe_groups_response::DescribedGroupMember::default()
                        .with_member_id(str_bytes(id))
                        .with_client_id(str_bytes(client))
                        .with_client_host(str_bytes(host))
                        .with_member_assignment(assignment)
                })
                .collect();
            described.push(
                describe_groups_response::DescribedGroup::default()
                    .with_group_id(group.clone())
                    .with_group_state(str_bytes(info.state))
                    .with_protocol_type(str_bytes(info.protocol_type))
                    .with_protocol_data(str_bytes(info.protocol))
                    .with_members(members),
            );
        }
        Ok(DescribeGroupsResponse::default().with_groups(described))
    }

    fn offset_fetch(&mut self, r: &OffsetFetchRequest) -> Result<OffsetFetchResponse, String> {
        let request = Request::OffsetFetch {
            group: text(&r.group_id),
            topics: None,
        };
        let offsets = match self.ask(request)? {
            Ok(ResponseBody::OffsetFetch(offsets)) => offsets,
            Err(code) => {
                return Ok(OffsetFetchResponse::default().with_error_code(kafka_code(code, true)))
            }
            other => return Err(unexpected(other)),
        };
        let mut topics: Vec<offset_fetch_response::OffsetFetchResponseTopic> = Vec::new();
        for (topic, partition, offset, metadata) in offsets {
            let p = offset_fetch_response::OffsetFetchResponsePartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_metadata(Some(str_bytes(metadata)));
            match topics.iter_mut().find(|t| t.name.as_str() == topic) {
                Some(t) => t.partitions.push(p),
                None => topics.push(
                    offset_fetch_response::OffsetFetchResponseTopic::default()
                        .with_name(TopicName(str_bytes(topic)))
                        .with_partitions(vec![p]),
                ),
            }
        }
        Ok(OffsetFetchResponse::default().with_topics(topics))
    }

    fn list_offsets(&mut self, r: &ListOffsetsRequest) -> Result<ListOffsetsResponse, String> {
        let mut topics = Vec::with_capacity(r.topics.len());
        for t in &r.topics {
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                let request = Request::ListOffsets {
                    topic: text(&t.name),
                    partition: p.partition_index,
                    timestamp: p.timestamp,
                };
                let answer = list_offsets_response::ListOffsetsPartitionResponse::default()
                    .with_partition_index(p.partition_index);
                partitions.push(match self.ask(request)? {
                    Ok(ResponseBody::ListOffsets { offset, timestamp }) => {
                        answer.with_offset(offset).with_timestamp(timestamp)
                    }
                    Err(code) => answer.with_error_code(kafka_code(code, true)),
                    other => return Err(unexpected(other)),
                });
            }
            topics.push(
                list_offsets_response::ListOffsetsTopicResponse::default()
                    .with_name(t.name.clone())
                    .with_partitions(partitions),
            );
        }
        Ok(ListOffsetsResponse::default().with_topics(topics))
    }

    fn metadata(&mut self, r: &MetadataRequest) -> Result<MetadataResponse, String> {
        let names: Option<Vec<String>> = r.topics.as_ref().map(|ts| {
            ts.iter()
                .filter_map(|t| t.name.as_ref().map(|n| text(n)))
                .collect()
        });
        let md = match self.ask(Request::Metadata { topics: names })? {
            Ok(ResponseBody::Metadata(md)) => md,
            other => return Err(unexpected(other)),
        };
        let topics = md
            .topics
            .into_iter()
            .map(|t| {
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        metadata_response::MetadataResponsePartition::default()
                            .with_partition_index(p.partition)
                    })
                    .collect();
                metadata_response::MetadataResponseTopic::default()
                    .with_name(Some(TopicName(str_bytes(t.name))))
                    .with_error_code(kafka_code(t.error_code, true))
                    .with_partitions(partitions)
            })
            .collect();
        Ok(MetadataResponse::default().with_topics(topics))
    }

    fn delete_groups(&mut self, r: &DeleteGroupsRequest) -> Result<DeleteGroupsResponse, String> {
        let mut results = Vec::with_capacity(r.groups_names.len());
        for group in &r.groups_names {
            let code = match self.ask(Request::DeleteGroup { group: text(group) })? {
                Ok(_) => k::NONE,
                Err(code) => kafka_code(code, true),
            };
            results.push(
                delete_groups_response::DeletableGroupResult::default()
                    .with_group_id(group.clone())
                    .with_error_code(code),
            );
        }
        Ok(DeleteGroupsResponse::default().with_results(results))
    }

    fn offset_delete(&mut self, r: &OffsetDeleteRequest) -> Result<OffsetDeleteResponse, String> {
        let partitions = r
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (text(&t.name), p.partition_index))
            })
            .collect();
        let request = Request::OffsetDelete {
            group: text(&r.group_id),
            partitions,
        };
        let codes = match self.ask(request)? {
            Ok(ResponseBody::OffsetCommit(codes)) => codes,
            Err(code) => {
                return Ok(OffsetDeleteResponse::default().with_error_code(kafka_code(code, true)))
            }
            other => return Err(unexpected(other)),
        };
        let topics = per_topic(r.topics.iter().map(|t| &t.name), &codes, |p, code| {
            // Natively "not empty"; per partition Kafka says the group subscribes to the
            // topic.
            let code = match code {
                ErrorCode::GroupNotEmpty => k::GROUP_SUBSCRIBED_TO_TOPIC,
                other => kafka_code(other, true),
            };
            offset_delete_response::OffsetDeleteResponsePartition::default()
                .with_partition_index(p)
                .with_error_code(code)
        })
        .into_iter()
        .map(|(name, partitions)| {
            offset_delete_response::OffsetDeleteResponseTopic::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
        Ok(OffsetDeleteResponse::default().with_topics(topics))
    }

    fn offset_commit(&mut self, r: &OffsetCommitRequest) -> Result<OffsetCommitResponse, String> {
        let offsets = r
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    let metadata = p.committed_metadata.as_ref().map(text).unwrap_or_default();
                    (
                        text(&t.name),
                        p.partition_index,
                        p.committed_offset,
                        metadata,
                    )
                })
            })
            .collect();
        let request = Request::OffsetCommit {
            group: text(&r.group_id),
            offsets,
        };
        let codes = match self.ask(request)? {
            Ok(ResponseBody::OffsetCommit(codes)) => codes,
            Err(code) => {
                return Err(format!("committing: {code:?}"));
            }
            other => return Err(unexpected(other)),
        };
        let topics = per_topic(r.topics.iter().map(|t| &t.name), &codes, |p, code| {
            offset_commit_response::OffsetCommitResponsePartition::default()
                .with_partition_index(p)
                .with_error_code(kafka_code(code, true))
        })
        .into_iter()
        .map(|(name, partitions)| {
            offset_commit_response::OffsetCommitResponseTopic::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
        Ok(OffsetCommitResponse::default().with_topics(topics))
    }
}

/// The native per-partition codes grouped under the request's topics, in its order.
fn per_topic<'a, T>(
    topics: impl Iterator<Item = &'a TopicName>,
    codes: &[(String, i32, ErrorCode)],
    partition: impl Fn(i32, ErrorCode) -> T,
) -> Vec<(TopicName, Vec<T>)> {
    topics
        .map(|t| {
            let mine = codes.iter().filter(|(name, _, _)| name == t.as_str());
            (
                t.clone(),
                mine.map(|&(_, p, code)| partition(p, code)).collect(),
            )
        })
        .collect()
}
