//! Request and response bodies, with their encoders and decoders (PROTOCOL.md).

use bytes::Bytes;

use super::frame::{Frame, FrameBuilder};
use super::wire::{WireError, WireReader, WireWriter};
use super::{ApiKey, ErrorCode};
use crate::io::chain::ByteChain;

/// acks values on the wire: 0, 1, or -1 (all).
pub const ACKS_NONE: i16 = 0;
pub const ACKS_LEADER: i16 = 1;
pub const ACKS_ALL: i16 = -1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    ApiVersions,
    /// `topics: None` asks for every topic.
    Metadata {
        topics: Option<Vec<String>>,
    },
    CreateTopic {
        name: String,
        partitions: i32,
        configs: Vec<(String, String)>,
    },
    DeleteTopic {
        name: String,
    },
    Produce {
        topic: String,
        partition: i32,
        acks: i16,
        records: Bytes,
    },
    Fetch {
        topic: String,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    },
    ListOffsets {
        topic: String,
        partition: i32,
        timestamp: i64,
    },
    /// Produce to several partitions in one request (acks as Produce's).
    MultiProduce {
        acks: i16,
        partitions: Vec<super::multi::ProduceEntry>,
    },
    /// Fetch from several partitions in one request, at most `max_bytes` in all.
    MultiFetch {
        max_bytes: i32,
        partitions: Vec<super::multi::FetchEntry>,
    },
    /// A lookup by time in one round trip: ListOffsets, then a Fetch at the offset found.
    FetchAtTime {
        topic: String,
        partition: i32,
        timestamp: i64,
        max_bytes: i32,
    },
    /// Make the next lookups cold (loopback only unless the server allows remote admin).
    DropCaches {
        drop_kernel_page_cache: bool,
    },
    Stats,
    Metrics,
    /// Kafka's DeleteRecords: records below `offset` (-1: the log end) are no longer served.
    DeleteRecords {
        topic: String,
        partition: i32,
        offset: i64,
    },
    /// Kafka's AlterConfigs (incremental): set some keys, return others to their defaults.
    AlterConfigs {
        topic: String,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    },
    /// Offsets, sizes and segment counts per partition (null: every topic).
    DescribeLogs {
        topics: Option<Vec<String>>,
    },
    /// Roll the active segment of one partition (-1: every partition).
    RollSegments {
        topic: String,
        partition: i32,
    },
    /// Run retention and a cleaning pass on every partition of a topic now.
    RunLogMaintenance {
        topic: String,
    },
    /// Commit offsets for a group from outside it (only while it has no members).
    OffsetCommit {
        group: String,
        offsets: Vec<super::groups::OffsetCommitEntry>,
    },
    /// A group's committed offsets for `topics` (null: all).
    OffsetFetch {
        group: String,
        topics: Option<Vec<String>>,
    },
    ListGroups,
    DescribeGroup {
        group: String,
    },
    DeleteGroup {
        group: String,
    },
}

/// Request header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
}

impl Request {
    pub fn api_key(&self) -> ApiKey {
        match self {
            Request::ApiVersions => ApiKey::ApiVersions,
            Request::Metadata { .. } => ApiKey::Metadata,
            Request::CreateTopic { .. } => ApiKey::CreateTopic,
            Request::DeleteTopic { .. } => ApiKey::DeleteTopic,
            Request::Produce { .. } => ApiKey::Produce,
            Request::Fetch { .. } => ApiKey::Fetch,
            Request::FetchAtTime { .. } => ApiKey::FetchAtTime,
            Request::MultiProduce { .. } => ApiKey::MultiProduce,
            Request::MultiFetch { .. } => ApiKey::MultiFetch,
            Request::ListOffsets { .. } => ApiKey::ListOffsets,
            Request::DropCaches { .. } => ApiKey::DropCaches,
            Request::Stats => ApiKey::Stats,
            Request::Metrics => ApiKey::Metrics,
            Request::DeleteRecords { .. } => ApiKey::DeleteRecords,
            Request::AlterConfigs { .. } => ApiKey::AlterConfigs,
            Request::DescribeLogs { .. } => ApiKey::DescribeLogs,
            Request::RollSegments { .. } => ApiKey::RollSegments,
            Request::RunLogMaintenance { .. } => ApiKey::RunLogMaintenance,
            Request::OffsetCommit { .. } => ApiKey::OffsetCommit,
            Request::OffsetFetch { .. } => ApiKey::OffsetFetch,
            Request::ListGroups => ApiKey::ListGroups,
            Request::DescribeGroup { .. } => ApiKey::DescribeGroup,
            Request::DeleteGroup { .. } => ApiKey::DeleteGroup,
        }
    }

    /// Encodes a whole request frame (size prefix included).
    pub fn encode_frame(&self, correlation_id: i32) -> Vec<u8> {
        let payload = match self {
            Request::Produce { records, .. } => records.len(),
            _ => 0,
        };
        let mut w = WireWriter::frame(128 + payload);
        w.i16(self.api_key() as i16).i16(0).i32(correlation_id);
        match self {
            Request::ApiVersions => {}
            Request::Metadata { topics } | Request::DescribeLogs { topics } => {
                put_strings(&mut w, topics.as_deref())
            }
            Request::CreateTopic {
                name,
                partitions,
                configs,
            } => {
                w.string(name).i32(*partitions);
                put_pairs(&mut w, configs);
            }
            Request::DeleteTopic { name } => {
                w.string(name);
            }
            Request::Produce {
                topic,
                partition,
                acks,
                records,
            } => {
                w.string(topic).i32(*partition).i16(*acks).bytes(records);
            }
            Request::Fetch {
                topic,
                partition,
                offset,
                max_bytes,
            } => {
                w.string(topic).i32(*partition).i64(*offset).i32(*max_bytes);
            }
            Request::MultiProduce { acks, partitions } => {
                super::multi::put_produce_request(&mut w, *acks, partitions);
            }
            Request::MultiFetch {
                max_bytes,
                partitions,
            } => {
                super::multi::put_fetch_request(&mut w, *max_bytes, partitions);
            }
            Request::FetchAtTime {
                topic,
                partition,
                timestamp,
                max_bytes,
            } => {
                w.string(topic)
                    .i32(*partition)
                    .i64(*timestamp)
                    .i32(*max_bytes);
            }
            Request::ListOffsets {
                topic,
                partition,
                timestamp,
            } => {
                w.string(topic).i32(*partition).i64(*timestamp);
            }
            Request::DropCaches {
                drop_kernel_page_cache,
            } => {
                w.i8(*drop_kernel_page_cache as i8);
            }
            Request::Stats | Request::Metrics => {}
            Request::DeleteRecords {
                topic,
                partition,
                offset,
            } => {
                w.string(topic).i32(*partition).i64(*offset);
            }
            Request::AlterConfigs { topic, set, delete } => {
                w.string(topic);
                put_pairs(&mut w, set);
                put_strings(&mut w, Some(delete));
            }
            Request::RollSegments { topic, partition } => {
                w.string(topic).i32(*partition);
            }
            Request::RunLogMaintenance { topic } => {
                w.string(topic);
            }
            Request::OffsetCommit { group, offsets } => {
                w.string(group);
                super::groups::put_commits(&mut w, offsets);
            }
            Request::OffsetFetch { group, topics } => {
                w.string(group);
                put_strings(&mut w, topics.as_deref());
            }
            Request::ListGroups => {}
            Request::DescribeGroup { group } | Request::DeleteGroup { group } => {
                w.string(group);
            }
        }
        w.finish_frame()
    }

    /// Reads the 8-byte request header from a frame body.
    pub fn decode_header(r: &mut WireReader<'_>) -> Result<RequestHeader, WireError> {
        Ok(RequestHeader {
            api_key: r.i16("api_key")?,
            api_version: r.i16("api_version")?,
            correlation_id: r.i32("correlation_id")?,
        })
    }

    /// Decodes a request body for a known api key (version already checked).
    pub fn decode_body(key: ApiKey, r: &mut WireReader<'_>) -> Result<Request, WireError> {
        let req = match key {
            ApiKey::ApiVersions => Request::ApiVersions,
            ApiKey::Metadata => Request::Metadata {
                topics: get_strings(r, "topic")?,
            },
            ApiKey::DescribeLogs => Request::DescribeLogs {
                topics: get_strings(r, "topic")?,
            },
            ApiKey::DeleteRecords => Request::DeleteRecords {
                topic: r.string("topic name")?,
                partition: r.i32("partition")?,
                offset: r.i64("offset")?,
            },
            ApiKey::AlterConfigs => Request::AlterConfigs {
                topic: r.string("topic name")?,
                set: get_pairs(r)?,
                delete: get_strings(r, "config key")?.unwrap_or_default(),
            },
            ApiKey::RollSegments => Request::RollSegments {
                topic: r.string("topic name")?,
                partition: r.i32("partition")?,
            },
            ApiKey::RunLogMaintenance => Request::RunLogMaintenance {
                topic: r.string("topic name")?,
            },
            ApiKey::OffsetCommit => Request::OffsetCommit {
                group: r.string("group")?,
                offsets: super::groups::get_commits(r)?,
            },
            ApiKey::OffsetFetch => Request::OffsetFetch {
                group: r.string("group")?,
                topics: get_strings(r, "topic")?,
            },
            ApiKey::ListGroups => Request::ListGroups,
            ApiKey::DescribeGroup => Request::DescribeGroup {
                group: r.string("group")?,
            },
            ApiKey::DeleteGroup => Request::DeleteGroup {
                group: r.string("group")?,
            },
            ApiKey::CreateTopic => {
                let name = r.string("topic name")?;
                let partitions = r.i32("partitions")?;
                let configs = get_pairs(r)?;
                Request::CreateTopic {
                    name,
                    partitions,
                    configs,
                }
            }
            ApiKey::DeleteTopic => Request::DeleteTopic {
                name: r.string("topic name")?,
            },
            ApiKey::Produce => Request::Produce {
                topic: r.string("topic name")?,
                partition: r.i32("partition")?,
                acks: r.i16("acks")?,
                records: r.bytes("records")?,
            },
            ApiKey::Fetch => Request::Fetch {
                topic: r.string("topic name")?,
                partition: r.i32("partition")?,
                offset: r.i64("offset")?,
                max_bytes: r.i32("max_bytes")?,
            },
            ApiKey::MultiProduce => {
                let (acks, partitions) = super::multi::get_produce_request(r)?;
                Request::MultiProduce { acks, partitions }
            }
            ApiKey::MultiFetch => {
                let (max_bytes, partitions) = super::multi::get_fetch_request(r)?;
                Request::MultiFetch {
                    max_bytes,
                    partitions,
                }
            }
            ApiKey::FetchAtTime => Request::FetchAtTime {
                topic: r.string("topic name")?,
                partition: r.i32("partition")?,
                timestamp: r.i64("timestamp")?,
                max_bytes: r.i32("max_bytes")?,
            },
            ApiKey::ListOffsets => Request::ListOffsets {
                topic: r.string("topic name")?,
                partition: r.i32("partition")?,
                timestamp: r.i64("timestamp")?,
            },
            ApiKey::DropCaches => Request::DropCaches {
                drop_kernel_page_cache: r.i8("drop_kernel_page_cache")? != 0,
            },
            ApiKey::Stats => Request::Stats,
            ApiKey::Metrics => Request::Metrics,
        };
        r.finish()?;
        Ok(req)
    }
}

/// A nullable array of strings (null: "all").
fn put_strings(w: &mut WireWriter, items: Option<&[String]>) {
    match items {
        None => {
            w.i32(-1);
        }
        Some(items) => {
            w.i32(items.len() as i32);
            for s in items {
                w.string(s);
            }
        }
    }
}

fn get_strings(
    r: &mut WireReader<'_>,
    what: &'static str,
) -> Result<Option<Vec<String>>, WireError> {
    match r.count(what, 2)? {
        None => Ok(None),
        Some(n) => (0..n)
            .map(|_| r.string(what))
            .collect::<Result<_, _>>()
            .map(Some),
    }
}

/// An array of { key string, value string }.
fn put_pairs(w: &mut WireWriter, pairs: &[(String, String)]) {
    w.i32(pairs.len() as i32);
    for (k, v) in pairs {
        w.string(k).string(v);
    }
}

fn get_pairs(r: &mut WireReader<'_>) -> Result<Vec<(String, String)>, WireError> {
    let n = r.count("config count", 4)?.unwrap_or(0);
    (0..n)
        .map(|_| Ok((r.string("config key")?, r.string("config value")?)))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    pub shard: i32,
    pub host: String,
    pub port: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub partition: i32,
    pub owner_shard: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub name: String,
    pub error_code: ErrorCode,
    pub partitions: Vec<PartitionMetadata>,
    pub configs: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponse {
    pub shards: Vec<ShardInfo>,
    pub topics: Vec<TopicMetadata>,
}

impl MetadataResponse {
    /// Port of a shard's own listener, if reported.
    pub fn shard_port(&self, shard: i32) -> Option<i32> {
        self.shards
            .iter()
            .find(|s| s.shard == shard)
            .map(|s| s.port)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicMetadata> {
        self.topics.iter().find(|t| t.name == name)
    }
}

/// Server counters, summed over shards (cumulative since start).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsResponse {
    pub shards: i32,
    pub device_reads: i64,
    pub cache_hits: i64,
    pub cache_misses: i64,
    pub cache_bytes: i64,
    pub cache_budget_bytes: i64,
    pub rss_bytes: i64,
    /// The server's wall clock when it answered (epoch ms).
    pub clock_ms: i64,
}

/// One partition's log as DescribeLogs reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionLogInfo {
    pub partition: i32,
    pub owner_shard: i32,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub size_bytes: i64,
    pub segments: i32,
}

/// One topic in a DescribeLogs reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicLogInfo {
    pub name: String,
    pub error_code: ErrorCode,
    /// Config keys set explicitly (the rest are defaults).
    pub overrides: Vec<String>,
    pub partitions: Vec<PartitionLogInfo>,
}

/// Successful response bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseBody {
    ApiVersions(Vec<(i16, i16, i16)>),
    Metadata(MetadataResponse),
    CreateTopic,
    DeleteTopic,
    Produce {
        base_offset: i64,
        last_offset: i64,
        log_append_time: i64,
    },
    Fetch {
        log_start_offset: i64,
        log_end_offset: i64,
        records: ByteChain,
    },
    /// `offset == -1 && timestamp == -1` means "no answer" (as Kafka).
    ListOffsets {
        offset: i64,
        timestamp: i64,
    },
    MultiProduce(Vec<super::multi::Produced>),
    MultiFetch(Vec<super::multi::Fetched>),
    /// ListOffsets' answer and the Fetch at it (no records when nothing qualifies).
    FetchAtTime {
        offset: i64,
        timestamp: i64,
        log_start_offset: i64,
        log_end_offset: i64,
        records: ByteChain,
    },
    /// For DropCaches (after dropping) and Stats.
    Stats(StatsResponse),
    Metrics(super::metrics::MetricsResponse),
    DeleteRecords {
        low_watermark: i64,
    },
    DescribeLogs(Vec<TopicLogInfo>),
    /// What RunLogMaintenance did, summed over the topic's partitions.
    LogMaintenance {
        segments_deleted: i64,
        bytes_deleted: i64,
        records_removed: i64,
    },
    /// Per partition of an OffsetCommit: its outcome.
    OffsetCommit(Vec<(String, i32, ErrorCode)>),
    /// Committed (topic, partition, offset, metadata).
    OffsetFetch(Vec<super::groups::OffsetCommitEntry>),
    /// (group, protocol type, state)
    ListGroups(Vec<(String, String, String)>),
    DescribeGroup(super::groups::GroupInfo),
    /// AlterConfigs, RollSegments and DeleteGroup.
    Empty,
}

/// A decoded response: either an error (code + message) or a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub correlation_id: i32,
    pub result: Result<ResponseBody, (ErrorCode, String)>,
}

impl Response {
    /// Encodes a response frame (size prefix included).
    pub fn encode_frame(&self) -> Vec<u8> {
        self.encode().to_vec()
    }

    /// Encodes a response frame whose records (Fetch, FetchAtTime) stay the slices they
    /// are.
    pub fn encode(&self) -> Frame {
        let mut f = FrameBuilder::default();
        f.w.i32(self.correlation_id);
        match &self.result {
            Err((code, msg)) => {
                f.w.i16(*code as i16).nullable_string(Some(msg));
            }
            Ok(body) => {
                f.w.i16(0).nullable_string(None);
                encode_body(&mut f, body);
            }
        }
        f.finish()
    }

    /// Decodes a response frame body (size prefix removed) to a request of kind `key`.
    pub fn decode(key: ApiKey, frame: &Bytes) -> Result<Response, WireError> {
        let mut r = WireReader::from_bytes(frame);
        let correlation_id = r.i32("correlation_id")?;
        let code = r.i16("error_code")?;
        let msg = r.nullable_string("error_message")?;
        if code != 0 {
            let code = ErrorCode::from_i16(code).unwrap_or(ErrorCode::Internal);
            return Ok(Response {
                correlation_id,
                result: Err((code, msg.unwrap_or_default())),
            });
        }
        let body = decode_body(key, &mut r)?;
        r.finish()?;
        Ok(Response {
            correlation_id,
            result: Ok(body),
        })
    }
}

/// Writes a body; records go in as the slices they are.
fn encode_body(f: &mut FrameBuilder, body: &ResponseBody) {
    let w = &mut f.w;
    match body {
        ResponseBody::ApiVersions(v) => {
            w.i32(v.len() as i32);
            for (k, min, max) in v {
                w.i16(*k).i16(*min).i16(*max);
            }
        }
        ResponseBody::Metadata(m) => {
            w.i32(m.shards.len() as i32);
            for s in &m.shards {
                w.i32(s.shard).string(&s.host).i32(s.port);
            }
            w.i32(m.topics.len() as i32);
            for t in &m.topics {
                w.string(&t.name).i16(t.error_code as i16);
                w.i32(t.partitions.len() as i32);
                for p in &t.partitions {
                    w.i32(p.partition).i32(p.owner_shard);
                }
                w.i32(t.configs.len() as i32);
                for (k, v) in &t.configs {
                    w.string(k).string(v);
                }
            }
        }
        ResponseBody::CreateTopic | ResponseBody::DeleteTopic | ResponseBody::Empty => {}
        ResponseBody::DeleteRecords { low_watermark } => {
            w.i64(*low_watermark);
        }
        ResponseBody::OffsetCommit(codes) => super::groups::put_codes(w, codes),
        ResponseBody::OffsetFetch(offsets) => super::groups::put_commits(w, offsets),
        ResponseBody::ListGroups(groups) => super::groups::put_triples(w, groups),
        ResponseBody::DescribeGroup(g) => super::groups::put_group(w, g),
        ResponseBody::LogMaintenance {
            segments_deleted,
            bytes_deleted,
            records_removed,
        } => {
            w.i64(*segments_deleted)
                .i64(*bytes_deleted)
                .i64(*records_removed);
        }
        ResponseBody::DescribeLogs(topics) => {
            w.i32(topics.len() as i32);
            for t in topics {
                w.string(&t.name).i16(t.error_code as i16);
                put_strings(w, Some(&t.overrides));
                w.i32(t.partitions.len() as i32);
                for p in &t.partitions {
                    w.i32(p.partition)
                        .i32(p.owner_shard)
                        .i64(p.log_start_offset)
                        .i64(p.log_end_offset)
                        .i64(p.size_bytes)
                        .i32(p.segments);
                }
            }
        }
        ResponseBody::Produce {
            base_offset,
            last_offset,
            log_append_time,
        } => {
            w.i64(*base_offset).i64(*last_offset).i64(*log_append_time);
        }
        ResponseBody::Fetch {
            log_start_offset,
            log_end_offset,
            records,
        } => {
            w.i64(*log_start_offset).i64(*log_end_offset);
            f.records(records);
        }
        ResponseBody::ListOffsets { offset, timestamp } => {
            w.i64(*offset).i64(*timestamp);
        }
        ResponseBody::MultiProduce(all) => super::multi::put_produced(w, all),
        ResponseBody::MultiFetch(all) => super::multi::put_fetched(f, all),
        ResponseBody::FetchAtTime {
            offset,
            timestamp,
            log_start_offset,
            log_end_offset,
            records,
        } => {
            w.i64(*offset)
                .i64(*timestamp)
                .i64(*log_start_offset)
                .i64(*log_end_offset);
            f.records(records);
        }
        ResponseBody::Stats(s) => {
            w.i32(s.shards)
                .i64(s.device_reads)
                .i64(s.cache_hits)
                .i64(s.cache_misses)
                .i64(s.cache_bytes)
                .i64(s.cache_budget_bytes)
                .i64(s.rss_bytes)
                .i64(s.clock_ms);
        }
        ResponseBody::Metrics(m) => m.put(w),
    }
}

fn decode_body(key: ApiKey, r: &mut WireReader<'_>) -> Result<ResponseBody, WireError> {
    Ok(match key {
        ApiKey::ApiVersions => {
            let n = r.count("api count", 6)?.unwrap_or(0);
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push((r.i16("api_key")?, r.i16("min")?, r.i16("max")?));
            }
            ResponseBody::ApiVersions(v)
        }
        ApiKey::Metadata => {
            let n = r.count("shard count", 10)?.unwrap_or(0);
            let mut shards = Vec::with_capacity(n);
            for _ in 0..n {
                shards.push(ShardInfo {
                    shard: r.i32("shard")?,
                    host: r.string("host")?,
                    port: r.i32("port")?,
                });
            }
            let n = r.count("topic count", 12)?.unwrap_or(0);
            let mut topics = Vec::with_capacity(n);
            for _ in 0..n {
                let name = r.string("topic name")?;
                let code = r.i16("error_code")?;
                let np = r.count("partition count", 8)?.unwrap_or(0);
                let mut partitions = Vec::with_capacity(np);
                for _ in 0..np {
                    partitions.push(PartitionMetadata {
                        partition: r.i32("partition")?,
                        owner_shard: r.i32("owner_shard")?,
                    });
                }
                let nc = r.count("config count", 4)?.unwrap_or(0);
                let mut configs = Vec::with_capacity(nc);
                for _ in 0..nc {
                    configs.push((r.string("config key")?, r.string("config value")?));
                }
                topics.push(TopicMetadata {
                    name,
                    error_code: ErrorCode::from_i16(code).unwrap_or(ErrorCode::Internal),
                    partitions,
                    configs,
                });
            }
            ResponseBody::Metadata(MetadataResponse { shards, topics })
        }
        ApiKey::CreateTopic => ResponseBody::CreateTopic,
        ApiKey::AlterConfigs | ApiKey::RollSegments | ApiKey::DeleteGroup => ResponseBody::Empty,
        ApiKey::OffsetCommit => ResponseBody::OffsetCommit(super::groups::get_codes(r)?),
        ApiKey::OffsetFetch => ResponseBody::OffsetFetch(super::groups::get_commits(r)?),
        ApiKey::ListGroups => ResponseBody::ListGroups(super::groups::get_triples(r)?),
        ApiKey::DescribeGroup => ResponseBody::DescribeGroup(super::groups::get_group(r)?),
        ApiKey::DeleteRecords => ResponseBody::DeleteRecords {
            low_watermark: r.i64("low_watermark")?,
        },
        ApiKey::RunLogMaintenance => ResponseBody::LogMaintenance {
            segments_deleted: r.i64("segments_deleted")?,
            bytes_deleted: r.i64("bytes_deleted")?,
            records_removed: r.i64("records_removed")?,
        },
        ApiKey::DescribeLogs => ResponseBody::DescribeLogs(decode_topic_logs(r)?),
        ApiKey::DeleteTopic => ResponseBody::DeleteTopic,
        ApiKey::Produce => ResponseBody::Produce {
            base_offset: r.i64("base_offset")?,
            last_offset: r.i64("last_offset")?,
            log_append_time: r.i64("log_append_time")?,
        },
        ApiKey::Fetch => ResponseBody::Fetch {
            log_start_offset: r.i64("log_start_offset")?,
            log_end_offset: r.i64("log_end_offset")?,
            records: r.bytes("records")?.into(),
        },
        ApiKey::ListOffsets => ResponseBody::ListOffsets {
            offset: r.i64("offset")?,
            timestamp: r.i64("timestamp")?,
        },
        ApiKey::MultiProduce => ResponseBody::MultiProduce(super::multi::get_produced(r)?),
        ApiKey::MultiFetch => ResponseBody::MultiFetch(super::multi::get_fetched(r)?),
        ApiKey::FetchAtTime => ResponseBody::FetchAtTime {
            offset: r.i64("offset")?,
            timestamp: r.i64("timestamp")?,
            log_start_offset: r.i64("log_start_offset")?,
            log_end_offset: r.i64("log_end_offset")?,
            records: r.bytes("records")?.into(),
        },
        ApiKey::DropCaches | ApiKey::Stats => ResponseBody::Stats(StatsResponse {
            shards: r.i32("shards")?,
            device_reads: r.i64("device_reads")?,
            cache_hits: r.i64("cache_hits")?,
            cache_misses: r.i64("cache_misses")?,
            cache_bytes: r.i64("cache_bytes")?,
            cache_budget_bytes: r.i64("cache_budget_bytes")?,
            rss_bytes: r.i64("rss_bytes")?,
            clock_ms: r.i64("clock_ms")?,
        }),
        ApiKey::Metrics => ResponseBody::Metrics(super::metrics::MetricsResponse::get(r)?),
    })
}

fn decode_topic_logs(r: &mut WireReader<'_>) -> Result<Vec<TopicLogInfo>, WireError> {
    let n = r.count("topic count", 10)?.unwrap_or(0);
    let mut topics = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string("topic name")?;
        let code = r.i16("error_code")?;
        let overrides = get_strings(r, "config key")?.unwrap_or_default();
        let np = r.count("partition count", 32)?.unwrap_or(0);
        let mut partitions = Vec::with_capacity(np);
        for _ in 0..np {
            partitions.push(PartitionLogInfo {
                partition: r.i32("partition")?,
                owner_shard: r.i32("owner_shard")?,
                log_start_offset: r.i64("log_start_offset")?,
                log_end_offset: r.i64("log_end_offset")?,
                size_bytes: r.i64("size_bytes")?,
                segments: r.i32("segments")?,
            });
        }
        topics.push(TopicLogInfo {
            name,
            error_code: ErrorCode::from_i16(code).unwrap_or(ErrorCode::Internal),
            overrides,
            partitions,
        });
    }
    Ok(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(req: Request) {
        let frame = req.encode_frame(42);
        assert_eq!(
            i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize,
            frame.len() - 4
        );
        let body = Bytes::from(frame[4..].to_vec());
        let mut r = WireReader::from_bytes(&body);
        let h = Request::decode_header(&mut r).unwrap();
        assert_eq!(h.correlation_id, 42);
        let key = ApiKey::from_i16(h.api_key).unwrap();
        assert_eq!(Request::decode_body(key, &mut r).unwrap(), req);
    }

    #[test]
    fn requests_round_trip() {
        round_trip(Request::ApiVersions);
        round_trip(Request::Metadata { topics: None });
        round_trip(Request::Metadata {
            topics: Some(vec!["a".into(), "b".into()]),
        });
        round_trip(Request::CreateTopic {
            name: "orders".into(),
            partitions: 8,
            configs: vec![("segment.bytes".into(), "1024".into())],
        });
        round_trip(Request::DeleteTopic { name: "x".into() });
        round_trip(Request::Produce {
            topic: "t".into(),
            partition: 3,
            acks: -1,
            records: Bytes::from_static(b"abc"),
        });
        round_trip(Request::Fetch {
            topic: "t".into(),
            partition: 0,
            offset: 5,
            max_bytes: 100,
        });
        round_trip(Request::ListOffsets {
            topic: "t".into(),
            partition: 1,
            timestamp: -3,
        });
        round_trip(Request::DropCaches {
            drop_kernel_page_cache: true,
        });
        round_trip(Request::Stats);
        round_trip(Request::Metrics);
        round_trip(Request::MultiProduce {
            acks: -1,
            partitions: vec![super::super::multi::ProduceEntry {
                topic: "t".into(),
                partition: 3,
                records: Bytes::from_static(b"abc"),
            }],
        });
        round_trip(Request::MultiFetch {
            max_bytes: 1 << 20,
            partitions: vec![super::super::multi::FetchEntry {
                topic: "t".into(),
                partition: 3,
                offset: 9,
                max_bytes: 4096,
            }],
        });
        round_trip(Request::FetchAtTime {
            topic: "t".into(),
            partition: 1,
            timestamp: 1_700_000_000_000,
            max_bytes: 4096,
        });
        round_trip(Request::DeleteRecords {
            topic: "t".into(),
            partition: 2,
            offset: -1,
        });
        round_trip(Request::AlterConfigs {
            topic: "t".into(),
            set: vec![("retention.ms".into(), "1000".into())],
            delete: vec!["segment.bytes".into()],
        });
        round_trip(Request::DescribeLogs { topics: None });
        round_trip(Request::RollSegments {
            topic: "t".into(),
            partition: -1,
        });
        round_trip(Request::RunLogMaintenance { topic: "t".into() });
    }

    #[test]
    fn lying_counts_and_lengths_are_errors() {
        // Metadata with a count of 1e9 topics in a tiny frame.
        let mut w = WireWriter::new();
        w.i32(1_000_000_000);
        let mut r = WireReader::new(&w.buf);
        assert!(Request::decode_body(ApiKey::Metadata, &mut r).is_err());
        // Produce whose records length exceeds the frame.
        let mut w = WireWriter::new();
        w.string("t").i32(0).i16(1).i32(1000);
        let mut r = WireReader::new(&w.buf);
        assert!(Request::decode_body(ApiKey::Produce, &mut r).is_err());
        // Trailing bytes.
        let mut w = WireWriter::new();
        w.string("t").i8(0);
        let mut r = WireReader::new(&w.buf);
        assert!(Request::decode_body(ApiKey::DeleteTopic, &mut r).is_err());
    }

    #[test]
    fn responses_round_trip() {
        let resp = Response {
            correlation_id: 7,
            result: Ok(ResponseBody::Metadata(MetadataResponse {
                shards: vec![ShardInfo {
                    shard: 0,
                    host: "127.0.0.1".into(),
                    port: 7412,
                }],
                topics: vec![TopicMetadata {
                    name: "t".into(),
                    error_code: ErrorCode::None,
                    partitions: vec![PartitionMetadata {
                        partition: 0,
                        owner_shard: 0,
                    }],
                    configs: vec![("k".into(), "v".into())],
                }],
            })),
        };
        let frame = resp.encode_frame();
        let body = Bytes::from(frame[4..].to_vec());
        assert_eq!(Response::decode(ApiKey::Metadata, &body).unwrap(), resp);
        let err = Response {
            correlation_id: 9,
            result: Err((ErrorCode::UnknownTopic, "no topic x".into())),
        };
        let body = Bytes::from(err.encode_frame()[4..].to_vec());
        assert_eq!(Response::decode(ApiKey::Fetch, &body).unwrap(), err);
    }

    #[test]
    fn metrics_round_trip_with_whole_histograms() {
        let mut d = crate::metrics::Distribution::latency();
        d.record(42_000);
        let report = crate::metrics::MetricsReport {
            shards: 2,
            distributions: vec![crate::metrics::NamedDistribution {
                name: "stage.device_read".into(),
                dist: d,
            }],
            values: vec![("device_reads".into(), 7)],
        };
        let resp = Response {
            correlation_id: 3,
            result: Ok(ResponseBody::Metrics(
                super::super::metrics::MetricsResponse::of(&report),
            )),
        };
        let body = Bytes::from(resp.encode_frame()[4..].to_vec());
        let back = Response::decode(ApiKey::Metrics, &body).unwrap();
        assert_eq!(back, resp);
        let Ok(ResponseBody::Metrics(m)) = back.result else {
            panic!("not a metrics body")
        };
        let r = m.report().unwrap();
        assert_eq!(r.value("device_reads"), Some(7));
        let got = r.distribution("stage.device_read").unwrap();
        assert_eq!((got.count_recorded(), got.sum), (1, 42_000));
    }
}
