//! CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), v1-3, as kafka-acls and the
//! AdminClients use them. Creating and deleting need ALTER on the cluster, describing
//! DESCRIBE; with the authorizer off they answer SECURITY_DISABLED (54), as Kafka does.
//! Changes are durable and installed on every shard before the reply (`shard/security_changes.rs`).

use std::collections::BTreeMap;

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::errors::{self, kafka_code};
use super::refusal::Refusal;
use super::{str_bytes, Context};
use crate::security::acl::{
    AccessEntry, AclBinding, AclFilter, InvalidAcl, Operation, PatternFilter, PatternType,
    Permission, ResourcePattern, ResourceType,
};
use crate::security::acl_store::AclChange;
use crate::security::authorizer;
use crate::security::changes::{SecurityChange, SecurityOutcome};

pub async fn dispatch(ctx: &Context<'_>, request: RequestKind) -> ResponseKind {
    match request {
        RequestKind::CreateAcls(r) => ResponseKind::CreateAcls(create(ctx, r).await),
        RequestKind::DeleteAcls(r) => ResponseKind::DeleteAcls(delete(ctx, r).await),
        RequestKind::DescribeAcls(r) => ResponseKind::DescribeAcls(describe(ctx, r)),
        other => unreachable!("{other:?} is not an ACL request"),
    }
}

/// Why a whole request is refused: (code, message).
fn refusal(ctx: &Context<'_>, op: Operation) -> Option<Refusal> {
    if !ctx.shard.config().authorizer.enabled {
        let why = "No Authorizer is configured (authorizer.enable=false)";
        return Some(Refusal::new(errors::SECURITY_DISABLED, why));
    }
    (!ctx.on_cluster(op)).then(|| {
        let why = super::authorize::denied(ResourceType::Cluster, "");
        Refusal::new(errors::CLUSTER_AUTHORIZATION_FAILED, why)
    })
}

fn binding_of(c: &AclCreation) -> Result<AclBinding, InvalidAcl> {
    let bad = |what: &str, code: i8| InvalidAcl(format!("Invalid {what}: {code}"));
    let binding = AclBinding {
        resource: ResourcePattern {
            kind: ResourceType::from_code(c.resource_type)
                .ok_or_else(|| bad("resourceType", c.resource_type))?,
            name: c.resource_name.to_string(),
            pattern: PatternType::from_code(c.resource_pattern_type)
                .ok_or_else(|| bad("patternType", c.resource_pattern_type))?,
        },
        entry: AccessEntry {
            principal: c.principal.to_string(),
            host: c.host.to_string(),
            operation: Operation::from_code(c.operation)
                .ok_or_else(|| bad("operation", c.operation))?,
            permission: Permission::from_code(c.permission_type)
                .ok_or_else(|| bad("permissionType", c.permission_type))?,
        },
    };
    binding.validate()?;
    Ok(binding)
}

async fn create(ctx: &Context<'_>, r: CreateAclsRequest) -> CreateAclsResponse {
    let result = |code: i16, message: Option<String>| {
        AclCreationResult::default()
            .with_error_code(code)
            .with_error_message(message.map(str_bytes))
    };
    if let Some(Refusal { code, message: why }) = refusal(ctx, Operation::Alter) {
        let results = r.creations.iter().map(|_| result(code, Some(why.clone())));
        return CreateAclsResponse::default().with_results(results.collect());
    }
    let parsed: Vec<Result<AclBinding, InvalidAcl>> = r.creations.iter().map(binding_of).collect();
    let valid: Vec<AclBinding> = parsed.iter().filter_map(|p| p.clone().ok()).collect();
    let change = AclChange {
        add: valid,
        remove: Vec::new(),
    };
    let stored = ctx
        .shard
        .security_change(SecurityChange::Acls(change))
        .await;
    let results = parsed.into_iter().map(|p| match (p, &stored) {
        (Err(e), _) => result(errors::INVALID_REQUEST, Some(e.0)),
        (Ok(_), Ok(_)) => result(errors::NONE, None),
        (Ok(_), Err(e)) => result(kafka_code(e.code(), true), Some(e.message().clone())),
    });
    let results: Vec<_> = results.collect();
    assert_eq!(
        results.len(),
        r.creations.len(),
        "one result per ACL to create"
    );
    CreateAclsResponse::default().with_results(results)
}

/// A filter from its wire fields: (resource type, name, pattern type, principal, host,
/// operation, permission); codes 1 (ANY) match everything.
type WireFilter<'a> = (
    i8,
    Option<&'a StrBytes>,
    i8,
    Option<&'a StrBytes>,
    Option<&'a StrBytes>,
    i8,
    i8,
);

fn filter_of(w: WireFilter<'_>) -> Result<AclFilter, InvalidAcl> {
    let (kind, name, pattern, principal, host, operation, permission) = w;
    const ANY: i8 = 1;
    let bad = |what: &str, code: i8| InvalidAcl(format!("Invalid {what} filter: {code}"));
    let coded = |code: i8, what: &str, parse: fn(i8) -> bool| match code {
        ANY => Ok(false),
        c if parse(c) => Ok(true),
        c => Err(bad(what, c)),
    };
    coded(kind, "resourceType", |c| {
        ResourceType::from_code(c).is_some()
    })?;
    coded(operation, "operation", |c| {
        Operation::from_code(c).is_some()
    })?;
    coded(permission, "permissionType", |c| {
        Permission::from_code(c).is_some()
    })?;
    Ok(AclFilter {
        kind: ResourceType::from_code(kind),
        name: name.map(|n| n.to_string()),
        pattern: PatternFilter::from_code(pattern).ok_or_else(|| bad("patternType", pattern))?,
        principal: principal.map(|p| p.to_string()),
        host: host.map(|h| h.to_string()),
        operation: Operation::from_code(operation),
        permission: Permission::from_code(permission),
    })
}

fn describe(ctx: &Context<'_>, r: DescribeAclsRequest) -> DescribeAclsResponse {
    let response = DescribeAclsResponse::default();
    if let Some(Refusal { code, message: why }) = refusal(ctx, Operation::Describe) {
        return response
            .with_error_code(code)
            .with_error_message(Some(str_bytes(why)));
    }
    let wire = (
        r.resource_type_filter,
        r.resource_name_filter.as_ref(),
        r.pattern_type_filter,
        r.principal_filter.as_ref(),
        r.host_filter.as_ref(),
        r.operation,
        r.permission_type,
    );
    let filter = match filter_of(wire) {
        Ok(f) => f,
        Err(e) => {
            return response
                .with_error_code(errors::INVALID_REQUEST)
                .with_error_message(Some(str_bytes(e.0)))
        }
    };
    let mut by_resource: BTreeMap<ResourcePattern, Vec<AclDescription>> = BTreeMap::new();
    for b in authorizer::snapshot().matching(&filter) {
        let e = &b.entry;
        by_resource.entry(b.resource.clone()).or_default().push(
            AclDescription::default()
                .with_principal(str_bytes(e.principal.clone()))
                .with_host(str_bytes(e.host.clone()))
                .with_operation(e.operation.code())
                .with_permission_type(e.permission.code()),
        );
    }
    let resources = by_resource.into_iter().map(|(r, acls)| {
        DescribeAclsResource::default()
            .with_resource_type(r.kind.code())
            .with_resource_name(str_bytes(r.name))
            .with_pattern_type(r.pattern.code())
            .with_acls(acls)
    });
    response.with_resources(resources.collect())
}

fn wire_filter(f: &DeleteAclsFilter) -> WireFilter<'_> {
    (
        f.resource_type_filter,
        f.resource_name_filter.as_ref(),
        f.pattern_type_filter,
        f.principal_filter.as_ref(),
        f.host_filter.as_ref(),
        f.operation,
        f.permission_type,
    )
}

async fn delete(ctx: &Context<'_>, r: DeleteAclsRequest) -> DeleteAclsResponse {
    let failed = |code: i16, why: String| {
        DeleteAclsFilterResult::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes(why)))
    };
    if let Some(Refusal { code, message: why }) = refusal(ctx, Operation::Alter) {
        let results = r.filters.iter().map(|_| failed(code, why.clone()));
        return DeleteAclsResponse::default().with_filter_results(results.collect());
    }
    let parsed: Vec<Result<AclFilter, InvalidAcl>> = r
        .filters
        .iter()
        .map(|f| filter_of(wire_filter(f)))
        .collect();
    let change = AclChange {
        add: Vec::new(),
        remove: parsed.iter().filter_map(|p| p.clone().ok()).collect(),
    };
    let removed = match ctx
        .shard
        .security_change(SecurityChange::Acls(change))
        .await
    {
        Ok(SecurityOutcome::AclsRemoved(removed)) => removed,
        Ok(other) => unreachable!("an ACL change answers what it removed, not {other:?}"),
        Err(e) => {
            let code = kafka_code(e.code(), true);
            let results = parsed.iter().map(|_| failed(code, e.message().clone()));
            return DeleteAclsResponse::default().with_filter_results(results.collect());
        }
    };
    let mut removed = removed.into_iter();
    let results = parsed.into_iter().map(|p| match p {
        Err(e) => failed(errors::INVALID_REQUEST, e.0),
        Ok(_) => {
            let gone = removed.next().unwrap_or_default();
            DeleteAclsFilterResult::default()
                .with_matching_acls(gone.iter().map(matching).collect())
        }
    });
    let results: Vec<_> = results.collect();
    // The store answered one removal list per valid filter, in order: none is left over.
    assert!(removed.next().is_none(), "removal lists beyond the filters");
    DeleteAclsResponse::default().with_filter_results(results)
}

fn matching(b: &AclBinding) -> DeleteAclsMatchingAcl {
    let (r, e) = (&b.resource, &b.entry);
    DeleteAclsMatchingAcl::default()
        .with_resource_type(r.kind.code())
        .with_resource_name(str_bytes(r.name.clone()))
        .with_pattern_type(r.pattern.code())
        .with_principal(str_bytes(e.principal.clone()))
        .with_host(str_bytes(e.host.clone()))
        .with_operation(e.operation.code())
        .with_permission_type(e.permission.code())
}
