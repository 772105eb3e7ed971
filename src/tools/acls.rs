//! `shardlog acls`: Kafka's ACLs with kafka-acls' flags (`--add --allow-principal User:alice
//! --operation Read --topic orders --group billing`, `--list`, `--remove`,
//! `--resource-pattern-type prefixed`, `--producer`, `--consumer`). Against a running server
//! (`--bootstrap-server`, its Kafka listener: CreateAcls, DescribeAcls, DeleteAcls, as
//! kafka-acls does) or offline on a stopped server's data directory (`--data-dir`), which
//! is how the first ACLs are set before the first start.

use std::path::PathBuf;

use super::acl_target::AclTarget;

use crate::security::acl::{
    AccessEntry, AclBinding, AclFilter, Operation, PatternFilter, PatternType, Permission,
    ResourcePattern, ResourceType, CLUSTER_NAME,
};

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("action").required(true).args(["add", "remove", "list"])))]
pub struct AclsArgs {
    #[arg(long)]
    pub add: bool,
    #[arg(long)]
    pub remove: bool,
    #[arg(long)]
    pub list: bool,
    /// A running server (-b, --bootstrap and the default 127.0.0.1:7411 as every tool):
    /// its Kafka listener, or its native listener, which names the Kafka one.
    #[arg(long, short = 'b', visible_aliases = ["bootstrap", "broker-list"])]
    pub bootstrap_server: Option<String>,
    /// A stopped server's data directory.
    #[arg(long, conflicts_with = "bootstrap_server")]
    pub data_dir: Option<PathBuf>,
    #[command(flatten)]
    pub client: super::client_config::ClientConfigArgs,
    #[arg(long)]
    pub allow_principal: Vec<String>,
    #[arg(long)]
    pub deny_principal: Vec<String>,
    /// Hosts the allow ACLs apply to (default: every host, `*`).
    #[arg(long)]
    pub allow_host: Vec<String>,
    #[arg(long)]
    pub deny_host: Vec<String>,
    /// Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,
    /// AlterConfigs, IdempotentWrite or All (default All).
    #[arg(long)]
    pub operation: Vec<String>,
    #[arg(long)]
    pub topic: Vec<String>,
    #[arg(long)]
    pub group: Vec<String>,
    #[arg(long)]
    pub transactional_id: Vec<String>,
    #[arg(long)]
    pub cluster: bool,
    /// literal or prefixed (--add, --remove; default literal), or any or match (--list,
    /// --remove; --list's default is any).
    #[arg(long)]
    pub resource_pattern_type: Option<String>,
    /// --list: only this principal's ACLs.
    #[arg(long)]
    pub principal: Vec<String>,
    /// Kafka's convenience: WRITE, DESCRIBE and CREATE on the topics.
    #[arg(long)]
    pub producer: bool,
    /// Kafka's convenience: READ and DESCRIBE on the topics, READ on the groups.
    #[arg(long)]
    pub consumer: bool,
    /// With --producer: IDEMPOTENT_WRITE on the cluster too.
    #[arg(long)]
    pub idempotent: bool,
    /// Accepted for kafka-acls' scripts: this tool never prompts.
    #[arg(long)]
    pub force: bool,
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
}

fn resources(args: &AclsArgs, pattern: PatternType) -> Vec<ResourcePattern> {
    fn named(
        kind: ResourceType,
        names: &[String],
        pattern: PatternType,
    ) -> impl Iterator<Item = ResourcePattern> + '_ {
        names.iter().map(move |n| ResourcePattern {
            kind,
            name: n.clone(),
            pattern,
        })
    }
    let cluster = args.cluster.then(|| ResourcePattern {
        kind: ResourceType::Cluster,
        name: CLUSTER_NAME.to_string(),
        pattern: PatternType::Literal,
    });
    named(ResourceType::Topic, &args.topic, pattern)
        .chain(named(ResourceType::Group, &args.group, pattern))
        .chain(named(
            ResourceType::TransactionalId,
            &args.transactional_id,
            pattern,
        ))
        .chain(cluster)
        .collect()
}

fn operations(args: &AclsArgs) -> Result<Vec<Operation>, String> {
    if args.operation.is_empty() {
        return Ok(vec![Operation::All]);
    }
    let parse =
        |o: &String| Operation::from_name(o).ok_or_else(|| format!("unknown operation {o:?}"));
    args.operation.iter().map(parse).collect()
}

/// The operations a resource gets: --producer/--consumer's sets, or --operation's.
fn operations_for(args: &AclsArgs, kind: ResourceType) -> Result<Vec<Operation>, String> {
    use Operation::*;
    if !(args.producer || args.consumer) {
        return operations(args);
    }
    let mut ops = Vec::new();
    match kind {
        ResourceType::Topic if args.producer => ops.extend([Write, Describe, Create]),
        ResourceType::Cluster if args.producer && args.idempotent => ops.push(IdempotentWrite),
        ResourceType::TransactionalId if args.producer => ops.extend([Write, Describe]),
        _ => {}
    }
    match kind {
        ResourceType::Topic if args.consumer => ops.extend([Read, Describe]),
        ResourceType::Group if args.consumer => ops.push(Read),
        _ => {}
    }
    Ok(ops)
}

fn pattern_type(args: &AclsArgs) -> Result<PatternType, String> {
    match args
        .resource_pattern_type
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("literal") => Ok(PatternType::Literal),
        Some("prefixed") => Ok(PatternType::Prefixed),
        Some(other) => Err(format!(
            "--resource-pattern-type {other}: literal or prefixed to add"
        )),
    }
}

fn entries(args: &AclsArgs, ops: &[Operation]) -> Vec<AccessEntry> {
    let hosts = |h: &[String]| {
        if h.is_empty() {
            vec!["*".to_string()]
        } else {
            h.to_vec()
        }
    };
    let side = |principals: &[String], hosts: Vec<String>, permission: Permission| {
        let mut out = Vec::new();
        for p in principals {
            for h in &hosts {
                for op in ops {
                    out.push(AccessEntry {
                        principal: p.clone(),
                        host: h.clone(),
                        operation: *op,
                        permission,
                    });
                }
            }
        }
        out
    };
    let mut out = side(
        &args.allow_principal,
        hosts(&args.allow_host),
        Permission::Allow,
    );
    let allowed = out.len();
    assert_eq!(
        allowed,
        args.allow_principal.len() * hosts(&args.allow_host).len() * ops.len(),
        "one entry per principal, host and operation"
    );
    out.extend(side(
        &args.deny_principal,
        hosts(&args.deny_host),
        Permission::Deny,
    ));
    assert!(out[allowed..]
        .iter()
        .all(|e| e.permission == Permission::Deny));
    out
}

/// The bindings --add creates.
fn bindings(args: &AclsArgs) -> Result<Vec<AclBinding>, String> {
    if args.allow_principal.is_empty() && args.deny_principal.is_empty() {
        return Err("--add needs --allow-principal or --deny-principal".into());
    }
    let pattern = pattern_type(args)?;
    let mut out = Vec::new();
    for resource in resources(args, pattern) {
        for entry in entries(args, &operations_for(args, resource.kind)?) {
            let b = AclBinding {
                resource: resource.clone(),
                entry,
            };
            b.validate().map_err(|e| e.0)?;
            out.push(b);
        }
    }
    match out.is_empty() {
        true => Err("name a resource: --topic, --group, --transactional-id or --cluster".into()),
        false => Ok(out),
    }
}

/// The filters --list and --remove use: per resource named (or one for every resource),
/// per principal given.
fn filters(args: &AclsArgs) -> Result<Vec<AclFilter>, String> {
    let pattern = match args
        .resource_pattern_type
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None if args.list => PatternFilter::Any,
        Some("any") => PatternFilter::Any,
        Some("match") => PatternFilter::Match,
        _ => PatternFilter::Exactly(pattern_type(args)?),
    };
    let named = resources(args, PatternType::Literal);
    let resources: Vec<Option<ResourcePattern>> = match named.is_empty() {
        true => vec![None],
        false => named.into_iter().map(Some).collect(),
    };
    let principals: Vec<Option<String>> = args
        .principal
        .iter()
        .chain(&args.allow_principal)
        .chain(&args.deny_principal)
        .map(|p| Some(p.clone()))
        .collect();
    let principals = if principals.is_empty() {
        vec![None]
    } else {
        principals
    };
    let mut out = Vec::new();
    for r in &resources {
        for p in &principals {
            out.push(AclFilter {
                kind: r.as_ref().map(|r| r.kind),
                name: r.as_ref().map(|r| r.name.clone()),
                pattern: if r.is_some() {
                    pattern
                } else {
                    PatternFilter::Any
                },
                principal: p.clone(),
                ..AclFilter::any()
            });
        }
    }
    Ok(out)
}

pub fn run(args: AclsArgs, out: &mut dyn std::io::Write) -> Result<(), String> {
    let server = args
        .bootstrap_server
        .as_deref()
        .unwrap_or(super::DEFAULT_SERVER);
    let mut target: Box<dyn AclTarget> = match &args.data_dir {
        Some(dir) => Box::new(super::acls_offline::Offline::open(dir)?),
        None => Box::new(super::acls_live::Live::connect(
            server,
            &args.client,
            args.timeout_ms,
        )?),
    };
    let print = |out: &mut dyn std::io::Write, text: String| {
        write!(out, "{text}").map_err(|e| e.to_string())
    };
    if args.add {
        let added = bindings(&args)?;
        print(out, format!("Adding ACLs:\n{}", listing(&added)))?;
        target.create(added)?;
    }
    if args.remove {
        let removed = target.delete(filters(&args)?)?;
        print(out, format!("Removed ACLs:\n{}", listing(&removed)))?;
    }
    if args.list {
        let mut found = Vec::new();
        for f in filters(&args)? {
            found.extend(target.describe(&f)?);
        }
        found.sort();
        found.dedup();
        print(out, listing(&found))?;
    }
    Ok(())
}

/// kafka-acls' listing: per resource pattern, its ACLs.
pub fn listing(bindings: &[AclBinding]) -> String {
    let mut sorted = bindings.to_vec();
    sorted.sort();
    let mut text = String::new();
    let mut current: Option<&ResourcePattern> = None;
    for b in &sorted {
        if current != Some(&b.resource) {
            let r = &b.resource;
            text.push_str(&format!(
                "Current ACLs for resource `ResourcePattern(resourceType={}, name={}, patternType={})`:\n",
                r.kind.name().to_uppercase(),
                r.name,
                r.pattern
            ));
            current = Some(r);
        }
        let e = &b.entry;
        text.push_str(&format!(
            " \t(principal={}, host={}, operation={}, permissionType={})\n",
            e.principal,
            e.host,
            e.operation.name().to_uppercase(),
            e.permission.name().to_uppercase()
        ));
    }
    text
}
