//! DescribeConfigs v1-4, IncrementalAlterConfigs v0-1 and AlterConfigs v0-2
//! (`kafka-configs`): a topic's configs with their sources, and changes to them made the
//! way the native AlterConfigs makes them (validated as a whole, durable in the topic's
//! metadata file, then applied by every shard without a restart). Broker settings are
//! described with their values; they are static (the server's config file), so altering
//! one is refused with a message that says so.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::errors::{self, kafka_code};
use super::{str_bytes, Context};
use crate::catalog::topics::{TopicConfig, TopicMeta};
use crate::protocol::ErrorCode;

/// Config resource types.
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
/// Config sources (DescribeConfigs v1+, CreateTopics v5+).
const SOURCE_TOPIC: i8 = 1;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;
/// IncrementalAlterConfigs operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;
/// The one topic key whose value is a list (APPEND and SUBTRACT apply to it).
const LIST_KEYS: &[&str] = &["cleanup.policy"];

type Outcome = Result<(), (i16, String)>;

/// Every topic key with its value and source, optionally only `keys`.
pub(super) fn described(
    config: &TopicConfig,
    keys: Option<&[String]>,
) -> Vec<(String, String, i8)> {
    config
        .log
        .to_pairs()
        .into_iter()
        .filter(|(k, _)| keys.is_none_or(|keys| keys.contains(k)))
        .map(|(k, v)| {
            let source = match config.is_override(&k) {
                true => SOURCE_TOPIC,
                false => SOURCE_DEFAULT,
            };
            (k, v, source)
        })
        .collect()
}

pub fn describe(ctx: &Context<'_>, request: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let results = request
        .resources
        .into_iter()
        .map(|res| {
            let name = res.resource_name.to_string();
            let keys: Option<Vec<String>> = res
                .configuration_keys
                .map(|ks| ks.iter().map(|k| k.to_string()).collect());
            let r = DescribeConfigsResult::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name);
            match res.resource_type {
                RESOURCE_TOPIC => match ctx.shard.topic(&name) {
                    Some(meta) => r.with_configs(topic_configs(&meta, keys.as_deref())),
                    None => r
                        .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                        .with_error_message(Some(str_bytes(format!("unknown topic {name:?}")))),
                },
                RESOURCE_BROKER => r.with_configs(broker_configs(ctx, keys.as_deref())),
                other => r
                    .with_error_code(errors::INVALID_REQUEST)
                    .with_error_message(Some(str_bytes(format!(
                        "resource type {other} is not supported"
                    )))),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

fn config_entry(
    name: String,
    value: String,
    source: i8,
    read_only: bool,
) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult::default()
        .with_name(str_bytes(name))
        .with_value(Some(str_bytes(value)))
        .with_config_source(source)
        .with_read_only(read_only)
}

fn topic_configs(meta: &TopicMeta, keys: Option<&[String]>) -> Vec<DescribeConfigsResourceResult> {
    described(&meta.config, keys)
        .into_iter()
        .map(|(name, value, source)| config_entry(name, value, source, false))
        .collect()
}

/// Every server key with its value in force: static broker configs (read-only here).
fn broker_configs(
    ctx: &Context<'_>,
    keys: Option<&[String]>,
) -> Vec<DescribeConfigsResourceResult> {
    ctx.shard
        .config
        .described()
        .into_iter()
        .filter(|(k, _, _)| keys.is_none_or(|keys| keys.iter().any(|x| x == k)))
        .map(|(name, value, changed)| {
            let source = match changed {
                true => SOURCE_STATIC_BROKER,
                false => SOURCE_DEFAULT,
            };
            config_entry(name.to_string(), value, source, true)
        })
        .collect()
}

/// The topic a resource to alter names, or why it cannot be altered.
fn topic_of(ctx: &Context<'_>, resource_type: i8, name: &str) -> Result<TopicMeta, (i16, String)> {
    match (resource_type, ctx.shard.topic(name)) {
        (RESOURCE_TOPIC, Some(meta)) => Ok(meta),
        (RESOURCE_TOPIC, None) => Err((
            errors::UNKNOWN_TOPIC_OR_PARTITION,
            format!("unknown topic {name:?}"),
        )),
        (other, _) => Err(not_a_topic(other)),
    }
}

/// Why a resource other than a topic cannot be altered.
fn not_a_topic(resource_type: i8) -> (i16, String) {
    match resource_type {
        RESOURCE_BROKER => (
            errors::INVALID_REQUEST,
            "shardlog's broker settings are static: set them in the server's config file and restart"
                .into(),
        ),
        other => (errors::INVALID_REQUEST, format!("resource type {other} is not supported")),
    }
}

/// Applies (or, `validate_only`, only checks) one topic's change.
async fn alter_topic(
    ctx: &Context<'_>,
    name: &str,
    set: Vec<(String, String)>,
    delete: Vec<String>,
    validate_only: bool,
) -> Outcome {
    let result = if validate_only {
        crate::shard::admin::check_alter(ctx.shard, name, &set, &delete).map(|_| ())
    } else {
        ctx.shard
            .alter_configs(name.to_string(), set, delete)
            .await
            .map(|_| ())
    };
    result.map_err(|e| {
        let code = match e.code {
            ErrorCode::InvalidRequest => errors::INVALID_CONFIG,
            other => kafka_code(other, true),
        };
        (code, e.message)
    })
}

/// One incremental operation on `set`/`delete`, against the topic's current `config`.
fn incremental_op(
    config: &TopicConfig,
    op: i8,
    key: String,
    value: Option<StrBytes>,
    set: &mut Vec<(String, String)>,
    delete: &mut Vec<String>,
) -> Outcome {
    let value = value.map(|v| v.to_string());
    let invalid = |why: String| Err((errors::INVALID_CONFIG, why));
    match (op, value) {
        (OP_DELETE, _) => delete.push(key),
        (OP_SET, Some(v)) => set.push((key, v)),
        (OP_APPEND | OP_SUBTRACT, Some(v)) if LIST_KEYS.contains(&key.as_str()) => {
            let current = config.log.to_pairs().into_iter().find(|(k, _)| *k == key);
            let mut items: Vec<String> = current
                .map(|(_, v)| v.split(',').map(|s| s.trim().to_string()).collect())
                .unwrap_or_default();
            for item in v.split(',').map(str::trim) {
                match op {
                    OP_APPEND if !items.iter().any(|i| i == item) => items.push(item.to_string()),
                    OP_SUBTRACT => items.retain(|i| i != item),
                    _ => {}
                }
            }
            set.push((key, items.join(",")));
        }
        (OP_APPEND | OP_SUBTRACT, Some(_)) => {
            return invalid(format!(
                "{key} is not a list: APPEND and SUBTRACT apply to list configs"
            ))
        }
        (OP_SET | OP_APPEND | OP_SUBTRACT, None) => {
            return invalid(format!("{key}: a value is required"))
        }
        (other, _) => {
            return Err((
                errors::INVALID_REQUEST,
                format!("unknown config operation {other}"),
            ))
        }
    }
    Ok(())
}

pub async fn incremental_alter(
    ctx: &Context<'_>,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for res in request.resources {
        let name = res.resource_name.to_string();
        let outcome = match topic_of(ctx, res.resource_type, &name) {
            Ok(meta) => {
                let (mut set, mut delete) = (Vec::new(), Vec::new());
                let ops = res.configs.into_iter().try_for_each(|c| {
                    let key = c.name.to_string();
                    incremental_op(
                        &meta.config,
                        c.config_operation,
                        key,
                        c.value,
                        &mut set,
                        &mut delete,
                    )
                });
                match ops {
                    Ok(()) => alter_topic(ctx, &name, set, delete, request.validate_only).await,
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        let (code, message) = split(outcome);
        responses.push(
            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

/// The legacy AlterConfigs replaces a topic's whole config: keys not given return to
/// their defaults.
pub async fn alter(ctx: &Context<'_>, request: AlterConfigsRequest) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for res in request.resources {
        let name = res.resource_name.to_string();
        let outcome = match topic_of(ctx, res.resource_type, &name) {
            Ok(meta) => {
                let set: Vec<(String, String)> = res
                    .configs
                    .iter()
                    .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                    .collect();
                let delete = meta
                    .config
                    .overrides
                    .keys()
                    .filter(|k| {
                        !set.iter()
                            .any(|(s, _)| crate::config::canonical_keys(s).contains(&k.as_str()))
                    })
                    .cloned()
                    .collect();
                alter_topic(ctx, &name, set, delete, request.validate_only).await
            }
            Err(e) => Err(e),
        };
        let (code, message) = split(outcome);
        responses.push(
            alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    AlterConfigsResponse::default().with_responses(responses)
}

fn split(outcome: Outcome) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (errors::NONE, None),
        Err((code, message)) => (code, Some(str_bytes(message))),
    }
}
