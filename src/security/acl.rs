//! Kafka's ACL model (KIP-290 patterns): an ACL binds a resource pattern (type, name,
//! LITERAL or PREFIXED) to an entry (principal, host, operation, ALLOW or DENY). The codes
//! are Kafka's wire codes; the names are kafka-acls' spellings. Filters (DescribeAcls,
//! DeleteAcls, `shardlog acls --list/--remove`) match bindings as Kafka's
//! `AclBindingFilter` does.

/// The resource types an ACL can name (Kafka codes 2-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
}

/// The one cluster resource's name, as Kafka names it.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal name matching every resource of its type.
pub const WILDCARD: &str = "*";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum PatternType {
    Literal,
    Prefixed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Operation {
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Permission {
    Deny,
    Allow,
}

/// A Kafka code and name per value: one table per enum, read both ways.
macro_rules! coded {
    ($ty:ident, $($value:ident = $code:literal, $name:literal;)+) => {
        impl $ty {
            pub const ALL_VALUES: &'static [$ty] = &[$($ty::$value),+];

            pub fn code(self) -> i8 {
                match self { $($ty::$value => $code),+ }
            }

            pub fn from_code(code: i8) -> Option<$ty> {
                match code { $($code => Some($ty::$value),)+ _ => None }
            }

            /// kafka-acls' spelling.
            pub fn name(self) -> &'static str {
                match self { $($ty::$value => $name),+ }
            }

            /// Parses a name in any case, with or without `_` (`cluster_action`, `ClusterAction`).
            pub fn from_name(name: &str) -> Option<$ty> {
                let wanted = name.replace('_', "").to_ascii_lowercase();
                Self::ALL_VALUES.iter().copied().find(|v| v.name().to_ascii_lowercase() == wanted)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

coded!(ResourceType, Topic = 2, "Topic"; Group = 3, "Group"; Cluster = 4, "Cluster";
    TransactionalId = 5, "TransactionalId";);
coded!(PatternType, Literal = 3, "LITERAL"; Prefixed = 4, "PREFIXED";);
coded!(Operation, All = 2, "All"; Read = 3, "Read"; Write = 4, "Write"; Create = 5, "Create";
    Delete = 6, "Delete"; Alter = 7, "Alter"; Describe = 8, "Describe";
    ClusterAction = 9, "ClusterAction"; DescribeConfigs = 10, "DescribeConfigs";
    AlterConfigs = 11, "AlterConfigs"; IdempotentWrite = 12, "IdempotentWrite";);
coded!(Permission, Deny = 2, "Deny"; Allow = 3, "Allow";);

impl Operation {
    /// Whether an ALLOW of `self` also allows `wanted`: ALL allows everything; READ, WRITE,
    /// DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS (Kafka's
    /// implied operations; a DENY denies only what it names, or everything for ALL).
    pub fn allows(self, wanted: Operation) -> bool {
        use Operation::*;
        self == wanted
            || self == All
            || (wanted == Describe && matches!(self, Read | Write | Delete | Alter))
            || (wanted == DescribeConfigs && self == AlterConfigs)
    }

    pub fn denies(self, wanted: Operation) -> bool {
        self == wanted || self == Operation::All
    }
}

/// The resources an ACL applies to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourcePattern {
    pub kind: ResourceType,
    pub name: String,
    pub pattern: PatternType,
}

impl ResourcePattern {
    /// Whether the named resource is covered by this pattern.
    pub fn covers(&self, kind: ResourceType, name: &str) -> bool {
        self.kind == kind
            && match self.pattern {
                PatternType::Literal => self.name == name || self.name == WILDCARD,
                PatternType::Prefixed => name.starts_with(&self.name),
            }
    }
}

/// Who may (or may not) do what, from where.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccessEntry {
    /// `Type:name`, e.g. `User:alice`; `User:*` is every user.
    pub principal: String,
    /// A client IP address, or `*`.
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AclBinding {
    pub resource: ResourcePattern,
    pub entry: AccessEntry,
}

impl std::fmt::Display for AclBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (r, e) = (&self.resource, &self.entry);
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={}) on \
             ResourcePattern(resourceType={}, name={}, patternType={})",
            e.principal, e.host, e.operation, e.permission, r.kind, r.name, r.pattern
        )
    }
}

/// Why an ACL cannot be created (Kafka answers INVALID_REQUEST).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidAcl(pub String);

/// Longest resource name, principal or host an ACL may hold (Kafka strings are int16-sized).
pub const MAX_FIELD: usize = 1024;

impl AclBinding {
    /// Kafka's checks of a new ACL (AclControlManager.validateNewAcl), and shardlog's bound.
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        let bad = |why: String| Err(InvalidAcl(why));
        let (r, e) = (&self.resource, &self.entry);
        if r.name.is_empty() {
            return bad("Resource name should not be empty".into());
        }
        if r.kind == ResourceType::Cluster && r.name != CLUSTER_NAME {
            return bad(format!(
                "the cluster resource is named {CLUSTER_NAME}, not {:?}",
                r.name
            ));
        }
        match e.principal.split_once(':') {
            Some((kind, name)) if !kind.is_empty() && !name.is_empty() => {}
            _ => return bad(format!("Could not parse principal from `{}`", e.principal)),
        }
        if e.host.is_empty() {
            return bad("host must be an IP address or *".into());
        }
        for (what, value) in [
            ("name", &r.name),
            ("principal", &e.principal),
            ("host", &e.host),
        ] {
            if value.len() > MAX_FIELD {
                return bad(format!("{what} is over {MAX_FIELD} bytes"));
            }
        }
        Ok(())
    }
}

/// Which pattern types a filter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatternFilter {
    /// Any pattern type, the name matched exactly.
    Any,
    /// Every pattern that would apply to the name: the literal name, `*`, and prefixes of it.
    Match,
    Exactly(PatternType),
}

impl PatternFilter {
    /// Kafka's codes: 1 ANY, 2 MATCH, 3 LITERAL, 4 PREFIXED.
    pub fn from_code(code: i8) -> Option<PatternFilter> {
        match code {
            1 => Some(PatternFilter::Any),
            2 => Some(PatternFilter::Match),
            other => PatternType::from_code(other).map(PatternFilter::Exactly),
        }
    }
}

/// Selects bindings (DescribeAcls, DeleteAcls); `None` matches anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub kind: Option<ResourceType>,
    pub name: Option<String>,
    pub pattern: PatternFilter,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Option<Operation>,
    pub permission: Option<Permission>,
}

impl AclFilter {
    /// Matches every binding.
    pub fn any() -> AclFilter {
        AclFilter {
            kind: None,
            name: None,
            pattern: PatternFilter::Any,
            principal: None,
            host: None,
            operation: None,
            permission: None,
        }
    }

    pub fn matches(&self, b: &AclBinding) -> bool {
        self.matches_resource(&b.resource) && self.matches_entry(&b.entry)
    }

    /// Kafka's ResourcePatternFilter.matches.
    fn matches_resource(&self, r: &ResourcePattern) -> bool {
        if self.kind.is_some_and(|k| k != r.kind) {
            return false;
        }
        let Some(name) = &self.name else {
            return match self.pattern {
                PatternFilter::Exactly(p) => p == r.pattern,
                PatternFilter::Any | PatternFilter::Match => true,
            };
        };
        match self.pattern {
            PatternFilter::Any => *name == r.name,
            PatternFilter::Exactly(p) => p == r.pattern && *name == r.name,
            PatternFilter::Match => r.covers(r.kind, name),
        }
    }

    fn matches_entry(&self, e: &AccessEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && self.host.as_ref().is_none_or(|h| *h == e.host)
            && self.operation.is_none_or(|o| o == e.operation)
            && self.permission.is_none_or(|p| p == e.permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn binding(
        kind: ResourceType,
        name: &str,
        pattern: PatternType,
        op: Operation,
    ) -> AclBinding {
        AclBinding {
            resource: ResourcePattern {
                kind,
                name: name.into(),
                pattern,
            },
            entry: AccessEntry {
                principal: "User:alice".into(),
                host: "*".into(),
                operation: op,
                permission: Permission::Allow,
            },
        }
    }

    #[test]
    fn codes_and_names_round_trip() {
        for op in Operation::ALL_VALUES {
            assert_eq!(Operation::from_code(op.code()), Some(*op));
            assert_eq!(Operation::from_name(op.name()), Some(*op));
        }
        assert_eq!(
            Operation::from_name("cluster_action"),
            Some(Operation::ClusterAction)
        );
        assert_eq!(ResourceType::from_code(4), Some(ResourceType::Cluster));
        assert_eq!(Permission::from_code(3), Some(Permission::Allow));
        assert_eq!(PatternFilter::from_code(2), Some(PatternFilter::Match));
        assert_eq!(Operation::from_code(1), None, "ANY is for filters only");
    }

    #[test]
    fn implied_operations_are_kafkas() {
        assert!(Operation::Read.allows(Operation::Describe));
        assert!(Operation::AlterConfigs.allows(Operation::DescribeConfigs));
        assert!(!Operation::Describe.allows(Operation::Read));
        assert!(
            !Operation::Read.denies(Operation::Describe),
            "DENY READ keeps DESCRIBE"
        );
        assert!(Operation::All.denies(Operation::Write));
    }

    #[test]
    fn filters_match_as_kafkas() {
        use PatternType::*;
        let lit = binding(ResourceType::Topic, "orders", Literal, Operation::Read);
        let pre = binding(ResourceType::Topic, "ord", Prefixed, Operation::Read);
        let star = binding(ResourceType::Topic, "*", Literal, Operation::Read);
        let mut f = AclFilter::any();
        assert!(f.matches(&lit) && f.matches(&pre) && f.matches(&star));
        f.name = Some("orders".into());
        assert!(f.matches(&lit) && !f.matches(&pre) && !f.matches(&star));
        f.pattern = PatternFilter::Match;
        assert!(f.matches(&lit) && f.matches(&pre) && f.matches(&star));
        f.pattern = PatternFilter::Exactly(Prefixed);
        assert!(!f.matches(&lit));
        f.name = Some("ord".into());
        assert!(f.matches(&pre));
        f.kind = Some(ResourceType::Group);
        assert!(!f.matches(&pre));
        let mut g = AclFilter::any();
        g.operation = Some(Operation::Write);
        assert!(!g.matches(&lit));
    }

    #[test]
    fn new_acls_are_validated() {
        let ok = binding(
            ResourceType::Topic,
            "t",
            PatternType::Literal,
            Operation::Read,
        );
        assert!(ok.validate().is_ok());
        let mut b = ok.clone();
        b.entry.principal = "alice".into();
        assert!(b.validate().is_err());
        let mut b = ok.clone();
        b.resource.name = String::new();
        assert!(b.validate().is_err());
        let mut b = ok;
        b.resource.kind = ResourceType::Cluster;
        assert!(b.validate().is_err());
        b.resource.name = CLUSTER_NAME.into();
        assert!(b.validate().is_ok());
    }
}
