//! `shardlog acls --bootstrap-server`: CreateAcls, DescribeAcls and DeleteAcls on a running
//! server's Kafka listener, as kafka-acls sends them, over the listener's security
//! protocol (`--command-config`, `-X`).

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::acl_target::AclTarget;
use super::client_config::ClientConfigArgs;
use crate::kafka::blocking_client::BlockingClient;
use crate::security::acl::{
    AccessEntry, AclBinding, AclFilter, Operation, PatternFilter, PatternType, Permission,
    ResourcePattern, ResourceType,
};

/// The ACL APIs' version used (flexible; every resource type shardlog has).
const VERSION: i16 = 2;
/// Kafka's code for "any" in a filter.
const ANY: i8 = 1;

pub struct Live(BlockingClient);

impl Live {
    /// Connects to the server's Kafka listener. Given the native listener (shardlog's
    /// default address, as for every tool), it asks the server for its Kafka listener under
    /// the same security and uses that, saying so on stderr.
    pub fn connect(
        server: &str,
        config: &ClientConfigArgs,
        timeout_ms: u64,
    ) -> Result<Live, String> {
        super::probe::kafka_client_of(server, config, timeout_ms).map(Live)
    }

    fn call(&mut self, key: ApiKey, request: RequestKind) -> Result<ResponseKind, String> {
        self.0
            .call(key, VERSION, &request)
            .map_err(|e| e.to_string())
    }
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn failed(code: i16, message: Option<&StrBytes>) -> String {
    let message = message.map(|m| m.to_string()).unwrap_or_default();
    let code = crate::kafka_codes::describe(code);
    format!("the server refused ({code}): {message}")
}

/// (type, name, pattern, principal, host, operation, permission) of a filter.
type WireFilter = (
    i8,
    Option<StrBytes>,
    i8,
    Option<StrBytes>,
    Option<StrBytes>,
    i8,
    i8,
);

fn wire_filter(f: &AclFilter) -> WireFilter {
    let pattern = match f.pattern {
        PatternFilter::Any => ANY,
        PatternFilter::Match => 2,
        PatternFilter::Exactly(p) => p.code(),
    };
    (
        f.kind.map_or(ANY, |k| k.code()),
        f.name.as_deref().map(text),
        pattern,
        f.principal.as_deref().map(text),
        f.host.as_deref().map(text),
        f.operation.map_or(ANY, |o| o.code()),
        f.permission.map_or(ANY, |p| p.code()),
    )
}

fn binding(
    (kind, name, pattern): (i8, &StrBytes, i8),
    (principal, host, operation, permission): (&StrBytes, &StrBytes, i8, i8),
) -> Result<AclBinding, String> {
    let bad = || {
        format!("the server sent an ACL this tool cannot read ({kind}/{pattern}/{operation}/{permission})")
    };
    Ok(AclBinding {
        resource: ResourcePattern {
            kind: ResourceType::from_code(kind).ok_or_else(bad)?,
            name: name.to_string(),
            pattern: PatternType::from_code(pattern).ok_or_else(bad)?,
        },
        entry: AccessEntry {
            principal: principal.to_string(),
            host: host.to_string(),
            operation: Operation::from_code(operation).ok_or_else(bad)?,
            permission: Permission::from_code(permission).ok_or_else(bad)?,
        },
    })
}

impl AclTarget for Live {
    fn create(&mut self, bindings: Vec<AclBinding>) -> Result<(), String> {
        let creations = bindings.iter().map(|b| {
            let (r, e) = (&b.resource, &b.entry);
            AclCreation::default()
                .with_resource_type(r.kind.code())
                .with_resource_name(text(&r.name))
                .with_resource_pattern_type(r.pattern.code())
                .with_principal(text(&e.principal))
                .with_host(text(&e.host))
                .with_operation(e.operation.code())
                .with_permission_type(e.permission.code())
        });
        let request = CreateAclsRequest::default().with_creations(creations.collect());
        match self.call(ApiKey::CreateAcls, RequestKind::CreateAcls(request))? {
            ResponseKind::CreateAcls(r) => match r.results.iter().find(|x| x.error_code != 0) {
                Some(x) => Err(failed(x.error_code, x.error_message.as_ref())),
                None => Ok(()),
            },
            other => Err(format!("unexpected answer to CreateAcls: {other:?}")),
        }
    }

    fn describe(&mut self, filter: &AclFilter) -> Result<Vec<AclBinding>, String> {
        let (kind, name, pattern, principal, host, operation, permission) = wire_filter(filter);
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(kind)
            .with_resource_name_filter(name)
            .with_pattern_type_filter(pattern)
            .with_principal_filter(principal)
            .with_host_filter(host)
            .with_operation(operation)
            .with_permission_type(permission);
        let r = match self.call(ApiKey::DescribeAcls, RequestKind::DescribeAcls(request))? {
            ResponseKind::DescribeAcls(r) if r.error_code == 0 => r,
            ResponseKind::DescribeAcls(r) => {
                return Err(failed(r.error_code, r.error_message.as_ref()))
            }
            other => return Err(format!("unexpected answer to DescribeAcls: {other:?}")),
        };
        let mut out = Vec::new();
        for res in &r.resources {
            for a in &res.acls {
                let resource = (res.resource_type, &res.resource_name, res.pattern_type);
                out.push(binding(
                    resource,
                    (&a.principal, &a.host, a.operation, a.permission_type),
                )?);
            }
        }
        Ok(out)
    }

    fn delete(&mut self, filters: Vec<AclFilter>) -> Result<Vec<AclBinding>, String> {
        let wire = filters.iter().map(|f| {
            let (kind, name, pattern, principal, host, operation, permission) = wire_filter(f);
            DeleteAclsFilter::default()
                .with_resource_type_filter(kind)
                .with_resource_name_filter(name)
                .with_pattern_type_filter(pattern)
                .with_principal_filter(principal)
                .with_host_filter(host)
                .with_operation(operation)
                .with_permission_type(permission)
        });
        let request = DeleteAclsRequest::default().with_filters(wire.collect());
        let r = match self.call(ApiKey::DeleteAcls, RequestKind::DeleteAcls(request))? {
            ResponseKind::DeleteAcls(r) => r,
            other => return Err(format!("unexpected answer to DeleteAcls: {other:?}")),
        };
        let mut out = Vec::new();
        for f in &r.filter_results {
            if f.error_code != 0 {
                return Err(failed(f.error_code, f.error_message.as_ref()));
            }
            for m in &f.matching_acls {
                let resource = (m.resource_type, &m.resource_name, m.pattern_type);
                out.push(binding(
                    resource,
                    (&m.principal, &m.host, m.operation, m.permission_type),
                )?);
            }
        }
        Ok(out)
    }
}
