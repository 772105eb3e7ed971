//! DescribeConfigs v1-4, IncrementalAlterConfigs v0-1 and AlterConfigs v0-2
//! (`kafka-configs`): a topic's configs with their sources, and changes to them made the
//! way the native AlterConfigs makes them (validated as a whole, durable in the topic's
//! metadata file, then applied by every shard without a restart). A broker's configs are
//! its server settings (static: the config file, read-only here) and the dynamic broker
//! defaults of topic configs (`log.retention.ms` & co, `catalog::broker_defaults`), which
//! alter like a topic's: for this broker (resource: its broker.id, "0" on a single node) or
//! as the cluster default ("").

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
use super::refusal::Refusal;
use super::{str_bytes, Context};
use crate::catalog::admin_host::AdminRequest;
use crate::catalog::broker_defaults::{self, BrokerDefaults, Scope};
use crate::catalog::topics::{TopicConfig, TopicMeta};
use crate::security::acl::{Operation, ResourceType};

/// Config resource types.
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
/// Config sources (DescribeConfigs v1+, CreateTopics v5+).
const SOURCE_TOPIC: i8 = 1;
const SOURCE_DYNAMIC_BROKER: i8 = 2;
const SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;
/// IncrementalAlterConfigs operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;
/// The keys whose value is a list (APPEND and SUBTRACT apply to them).
const LIST_KEYS: &[&str] = &["cleanup.policy", "log.cleanup.policy"];

type Outcome = Result<(), Refusal>;

/// Every topic key with its value and source (the topic's override, a dynamic broker
/// default, or Kafka's default), optionally only `keys`.
pub(super) fn described(
    config: &TopicConfig,
    broker: &BrokerDefaults,
    keys: Option<&[String]>,
) -> Vec<(String, String, i8)> {
    config
        .log
        .to_pairs()
        .into_iter()
        .filter(|(k, _)| keys.is_none_or(|keys| keys.contains(k)))
        .map(|(k, v)| {
            let inherited = broker_defaults::broker_key_of(&k).and_then(|b| broker.get(b));
            let source = match (config.is_override(&k), inherited) {
                (true, _) => SOURCE_TOPIC,
                (false, Some((_, scope))) => scope_source(scope),
                (false, None) => SOURCE_DEFAULT,
            };
            (k, v, source)
        })
        .collect()
}

fn scope_source(scope: Scope) -> i8 {
    match scope {
        Scope::Broker => SOURCE_DYNAMIC_BROKER,
        _ => SOURCE_DYNAMIC_DEFAULT_BROKER,
    }
}

pub fn describe(ctx: &Context<'_>, request: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let asked = request.resources.len();
    let results: Vec<DescribeConfigsResult> = request
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
            let refusal = config_refusal(ctx, res.resource_type, &name, Operation::DescribeConfigs);
            if let Some(Refusal { code, message: why }) = refusal {
                return r
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(why)));
            }
            match res.resource_type {
                RESOURCE_TOPIC => match ctx.shard.topic(&name) {
                    Some(meta) => r.with_configs(topic_configs(ctx, &meta, keys.as_deref())),
                    None => r
                        .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                        .with_error_message(Some(str_bytes(format!("unknown topic {name:?}")))),
                },
                RESOURCE_BROKER => match Scope::of_resource(&name, broker_id(ctx)) {
                    Ok(scope) => r.with_configs(broker_configs(ctx, scope, keys.as_deref())),
                    Err(e) => r
                        .with_error_code(errors::INVALID_REQUEST)
                        .with_error_message(Some(str_bytes(e.message()))),
                },
                other => r
                    .with_error_code(errors::INVALID_REQUEST)
                    .with_error_message(Some(str_bytes(format!(
                        "resource type {other} is not supported"
                    )))),
            }
        })
        .collect();
    assert_eq!(results.len(), asked, "one result per resource");
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

fn topic_configs(
    ctx: &Context<'_>,
    meta: &TopicMeta,
    keys: Option<&[String]>,
) -> Vec<DescribeConfigsResourceResult> {
    described(&meta.config, &ctx.shard.broker_defaults(), keys)
        .into_iter()
        .map(|(name, value, source)| config_entry(name, value, source, false))
        .collect()
}

/// A broker's configs: for this broker, every server key (static, read-only) and every
/// dynamic broker default with its value in force; for the cluster default (""), only the
/// dynamic configs set there, as Kafka describes `--entity-default`.
fn broker_configs(
    ctx: &Context<'_>,
    scope: Scope,
    keys: Option<&[String]>,
) -> Vec<DescribeConfigsResourceResult> {
    let wanted = |k: &str| keys.is_none_or(|keys| keys.iter().any(|x| x == k));
    let dynamic = ctx.shard.broker_defaults();
    if scope == Scope::Cluster {
        return dynamic
            .cluster
            .iter()
            .filter(|(k, _)| wanted(k))
            .map(|(k, v)| config_entry(k.clone(), v.clone(), SOURCE_DYNAMIC_DEFAULT_BROKER, false))
            .collect();
    }
    let server = ctx
        .shard
        .config()
        .described()
        .into_iter()
        .map(|(name, value, changed)| {
            // A throttle rate set dynamically wins over the config file's.
            let throttle = broker_defaults::THROTTLE_RATE_KEYS.contains(&name);
            if let Some((v, scope)) = dynamic.get(name).filter(|_| throttle) {
                return config_entry(name.to_string(), v.to_string(), scope_source(scope), false);
            }
            let source = match changed {
                true => SOURCE_STATIC_BROKER,
                false => SOURCE_DEFAULT,
            };
            config_entry(name.to_string(), value, source, true)
        });
    let kafka_defaults = crate::config::LogConfig::default().to_pairs();
    let defaults = broker_defaults::BROKER_SYNONYMS
        .iter()
        .map(|(broker_key, topic_key)| {
            let (value, source) = match dynamic.get(broker_key) {
                Some((v, scope)) => (v.to_string(), scope_source(scope)),
                None => {
                    let default = kafka_defaults.iter().find(|(k, _)| k == topic_key);
                    (
                        default.map(|(_, v)| v.clone()).unwrap_or_default(),
                        SOURCE_DEFAULT,
                    )
                }
            };
            config_entry(broker_key.to_string(), value, source, false)
        });
    let inert = broker_defaults::INERT_BROKER_KEYS
        .iter()
        .map(|(key, default)| {
            let (value, source) = match dynamic.get(key) {
                Some((v, scope)) => (v.to_string(), scope_source(scope)),
                None => (default.to_string(), SOURCE_DEFAULT),
            };
            config_entry(key.to_string(), value, source, false)
        });
    server
        .chain(defaults)
        .chain(inert)
        .filter(|c| wanted(c.name.as_str()))
        .collect()
}

/// This broker's id as broker resources name it (0 on a single node).
fn broker_id(ctx: &Context<'_>) -> i32 {
    ctx.shard.config().cluster.broker_id
}

/// The topic a resource to alter names, or why it cannot be altered.
fn topic_of(ctx: &Context<'_>, resource_type: i8, name: &str) -> Result<TopicMeta, Refusal> {
    match (resource_type, ctx.shard.topic(name)) {
        (RESOURCE_TOPIC, Some(meta)) => Ok(meta),
        (RESOURCE_TOPIC, None) => Err(Refusal::new(
            errors::UNKNOWN_TOPIC_OR_PARTITION,
            format!("unknown topic {name:?}"),
        )),
        (other, _) => Err(not_a_topic(other)),
    }
}

/// Why a resource other than a topic or broker cannot be altered.
fn not_a_topic(resource_type: i8) -> Refusal {
    Refusal::new(
        errors::INVALID_REQUEST,
        format!("resource type {resource_type} is not supported"),
    )
}

/// Applies (or, `validate_only`, only checks) a change to the dynamic broker configs.
async fn alter_broker(
    ctx: &Context<'_>,
    scope: Scope,
    set: Vec<(String, String)>,
    delete: Vec<String>,
    validate_only: bool,
) -> Outcome {
    let in_cluster = super::cluster_admin::in_cluster(ctx);
    let result = if validate_only {
        crate::catalog::admin::check_alter_broker(&ctx.shard.admin_host(), scope, &set, &delete)
            .map(|_| ())
    } else if scope == Scope::Cluster && in_cluster {
        return super::cluster_admin::alter_broker_defaults(ctx, (set, delete)).await;
    } else {
        let request = AdminRequest::AlterBrokerConfigs { scope, set, delete };
        ctx.shard.admin(request).await.map(|_| ())
    };
    result.map_err(|e| Refusal::new(kafka_code(e.code(), true), e.message()))
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
        crate::catalog::admin::check_alter(&ctx.shard.admin_host(), name, &set, &delete).map(|_| ())
    } else if super::cluster_admin::in_cluster(ctx) {
        return super::cluster_admin::alter_configs(ctx, name, (set, delete)).await;
    } else {
        let name = name.to_string();
        let request = AdminRequest::AlterConfigs { name, set, delete };
        ctx.shard.admin(request).await.map(|_| ())
    };
    result.map_err(|e| Refusal::new(super::refusal::config_code(e.code()), e.message()))
}

/// One incremental operation on `set`/`delete`; `current` gives a key's value in force
/// (for APPEND and SUBTRACT).
fn incremental_op(
    current: &dyn Fn(&str) -> Option<String>,
    op: i8,
    key: String,
    value: Option<StrBytes>,
    set: &mut Vec<(String, String)>,
    delete: &mut Vec<String>,
) -> Outcome {
    let value = value.map(|v| v.to_string());
    let invalid = |why: String| Err(Refusal::new(errors::INVALID_CONFIG, why));
    match (op, value) {
        (OP_DELETE, _) => delete.push(key),
        (OP_SET, Some(v)) => set.push((key, v)),
        (OP_APPEND | OP_SUBTRACT, Some(v)) if LIST_KEYS.contains(&key.as_str()) => {
            let mut items: Vec<String> = current(&key)
                .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
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
            return Err(Refusal::new(
                errors::INVALID_REQUEST,
                format!("unknown config operation {other}"),
            ))
        }
    }
    Ok(())
}

/// A resource's current values, for APPEND and SUBTRACT: a topic's config, or the
/// broker's dynamic configs in force.
enum Current {
    Topic(Box<TopicMeta>),
    Broker(Scope, BrokerDefaults),
}

impl Current {
    fn of(ctx: &Context<'_>, resource_type: i8, name: &str) -> Result<Current, Refusal> {
        match resource_type {
            RESOURCE_BROKER => {
                let scope = Scope::of_resource(name, broker_id(ctx))
                    .map_err(|e| Refusal::new(errors::INVALID_REQUEST, e.message()))?;
                Ok(Current::Broker(scope, ctx.shard.broker_defaults()))
            }
            _ => topic_of(ctx, resource_type, name).map(|meta| Current::Topic(Box::new(meta))),
        }
    }

    fn value(&self, key: &str) -> Option<String> {
        match self {
            Current::Topic(meta) => meta
                .config
                .log
                .to_pairs()
                .into_iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v),
            Current::Broker(_, d) => d.get(key).map(|(v, _)| v.to_string()),
        }
    }

    /// Keys set on the resource itself (what a legacy AlterConfigs replaces).
    fn own_keys(&self) -> Vec<String> {
        match self {
            Current::Topic(meta) => meta.config.overrides.keys().cloned().collect(),
            Current::Broker(scope, d) => d.keys_of(*scope),
        }
    }

    async fn alter(
        &self,
        ctx: &Context<'_>,
        set: Vec<(String, String)>,
        delete: Vec<String>,
        validate_only: bool,
    ) -> Outcome {
        match self {
            Current::Topic(meta) => alter_topic(ctx, &meta.name, set, delete, validate_only).await,
            Current::Broker(scope, _) => {
                alter_broker(ctx, *scope, set, delete, validate_only).await
            }
        }
    }
}

async fn incremental_one(
    ctx: &Context<'_>,
    res: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Outcome {
    let (kind, name) = (res.resource_type, res.resource_name.as_str());
    if let Some(denied) = config_refusal(ctx, kind, name, Operation::AlterConfigs) {
        return Err(denied);
    }
    let current = Current::of(ctx, kind, name)?;
    let (mut set, mut delete) = (Vec::new(), Vec::new());
    for c in &res.configs {
        let key = c.name.to_string();
        let value = |k: &str| current.value(k);
        incremental_op(
            &value,
            c.config_operation,
            key,
            c.value.clone(),
            &mut set,
            &mut delete,
        )?;
    }
    current.alter(ctx, set, delete, validate_only).await
}

pub async fn incremental_alter(
    ctx: &Context<'_>,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let asked = request.resources.len();
    let mut responses = Vec::with_capacity(asked);
    for res in request.resources {
        let outcome = incremental_one(ctx, &res, request.validate_only).await;
        let (code, message) = split(outcome);
        responses.push(
            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    assert_eq!(responses.len(), asked, "one response per resource");
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

/// The legacy AlterConfigs replaces a resource's whole config: keys not given return to
/// their defaults.
async fn alter_one(
    ctx: &Context<'_>,
    res: &kafka_protocol::messages::alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Outcome {
    let (kind, name) = (res.resource_type, res.resource_name.as_str());
    if let Some(denied) = config_refusal(ctx, kind, name, Operation::AlterConfigs) {
        return Err(denied);
    }
    let current = Current::of(ctx, kind, name)?;
    let set: Vec<(String, String)> = res
        .configs
        .iter()
        .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
        .collect();
    let delete = current
        .own_keys()
        .into_iter()
        .filter(|k| {
            !set.iter()
                .any(|(s, _)| crate::config::canonical_keys(s).contains(&k.as_str()))
        })
        .collect();
    current.alter(ctx, set, delete, validate_only).await
}

pub async fn alter(ctx: &Context<'_>, request: AlterConfigsRequest) -> AlterConfigsResponse {
    let asked = request.resources.len();
    let mut responses = Vec::with_capacity(asked);
    for res in request.resources {
        let outcome = alter_one(ctx, &res, request.validate_only).await;
        let (code, message) = split(outcome);
        responses.push(
            alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    assert_eq!(responses.len(), asked, "one response per resource");
    AlterConfigsResponse::default().with_responses(responses)
}

/// DescribeConfigs needs DESCRIBE_CONFIGS, the alters ALTER_CONFIGS: on the topic (else
/// 29) or on the cluster for the broker's configs (else 31).
fn config_refusal(
    ctx: &Context<'_>,
    resource_type: i8,
    name: &str,
    op: Operation,
) -> Option<Refusal> {
    match resource_type {
        RESOURCE_TOPIC => ctx.topic_refusal(op, name),
        RESOURCE_BROKER if !ctx.on_cluster(op) => Some(Refusal::new(
            errors::CLUSTER_AUTHORIZATION_FAILED,
            super::authorize::denied(ResourceType::Cluster, name),
        )),
        _ => None,
    }
}

fn split(outcome: Outcome) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (errors::NONE, None),
        Err(Refusal { code, message }) => (code, Some(str_bytes(message))),
    }
}
