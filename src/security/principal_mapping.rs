//! The principal of a client certificate, as Kafka's DefaultKafkaPrincipalBuilder makes it:
//! `User:` + the subject's distinguished name as Java's RFC 2253 form writes it (most
//! specific RDN first, `,` between RDNs with no space, `+` inside a multi-valued one), then
//! rewritten by `ssl.principal.mapping.rules` (KIP-371): comma-separated rules, the first
//! whose regex matches the whole DN wins; `RULE:regex/replacement/` with an optional `L`
//! or `U` to lower- or upper-case the result; `DEFAULT` keeps the DN. No rule matching is
//! an error (the connection is refused), as in Kafka.

use regex::Regex;

/// Attribute types RFC 2253 writes by name; others are written as their OID.
const NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.6", "C"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MappingError(pub String);

/// RFC 2253's escaping of an attribute value.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let edge_space = c == ' ' && (i == 0 || i == last);
        if matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || edge_space
            || (i == 0 && c == '#')
        {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn attribute(a: &x509_parser::x509::AttributeTypeAndValue<'_>) -> String {
    let oid = a.attr_type().to_id_string();
    let name = NAMES
        .iter()
        .find(|(o, _)| *o == oid)
        .map(|(_, n)| n.to_string());
    match (name, a.as_str()) {
        (Some(name), Ok(value)) => format!("{name}={}", escape(value)),
        (name, _) => {
            let hex: String = a.as_slice().iter().map(|b| format!("{b:02x}")).collect();
            format!("{}=#{hex}", name.unwrap_or(oid))
        }
    }
}

/// The subject DN of a DER certificate in Java's RFC 2253 form.
pub fn subject_dn(cert_der: &[u8]) -> Result<String, MappingError> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der)
        .map_err(|e| MappingError(format!("client certificate: {e}")))?;
    let rdns: Vec<String> = cert
        .subject()
        .iter_rdn()
        .map(|rdn| rdn.iter().map(attribute).collect::<Vec<_>>().join("+"))
        .collect();
    Ok(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Rewrite {
        pattern: Regex,
        replacement: String,
        case: Option<char>,
    },
}

/// Parsed `ssl.principal.mapping.rules`.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

/// Reads up to the next unescaped `/`; the escape of `/` is dropped, others are kept.
fn until_slash(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '/' => return Some((out, &text[i + 1..])),
            '\\' => match chars.next() {
                Some((_, '/')) => out.push('/'),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    None
}

fn bad(why: String) -> MappingError {
    MappingError(format!("ssl.principal.mapping.rules: {why}"))
}

/// The first rule of `text` and what follows it.
fn parse_rule(text: &str) -> Result<(Rule, &str), MappingError> {
    if let Some(r) = text.strip_prefix("DEFAULT") {
        return Ok((Rule::Default, r));
    }
    let r = text
        .strip_prefix("RULE:")
        .ok_or_else(|| bad(format!("{text:?}: expected DEFAULT or RULE:")))?;
    let (pattern, r) =
        until_slash(r).ok_or_else(|| bad(format!("{text:?}: RULE:regex/replacement/[LU]")))?;
    let (replacement, r) = until_slash(r).ok_or_else(|| bad(format!("{text:?}: no closing /")))?;
    let case = r.chars().next().filter(|c| matches!(c, 'L' | 'U'));
    let pattern = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| bad(e.to_string()))?;
    // Java's `$1` is `${1}` here (`$1x` would name a group "1x").
    let group = Regex::new(r"\$(\d+)").expect("a valid regex");
    let replacement = group.replace_all(&replacement, "$${$1}").to_string();
    let rule = Rule::Rewrite {
        pattern,
        replacement,
        case,
    };
    Ok((rule, &r[case.map_or(0, |_| 1)..]))
}

impl PrincipalMapper {
    pub fn parse(rules: &str) -> Result<PrincipalMapper, MappingError> {
        let mut parsed = Vec::new();
        let mut rest = rules.trim();
        while !rest.is_empty() {
            let (rule, after) = parse_rule(rest)?;
            parsed.push(rule);
            let after = after.trim_start();
            rest = match after.strip_prefix(',') {
                Some(r) => r.trim_start(),
                None if after.is_empty() => after,
                None => return Err(bad(format!("{after:?}: expected , between rules"))),
            };
        }
        match parsed.is_empty() {
            true => Err(bad("no rule".into())),
            false => Ok(PrincipalMapper { rules: parsed }),
        }
    }

    /// The user name a DN maps to.
    pub fn map(&self, dn: &str) -> Result<String, MappingError> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_string()),
                Rule::Rewrite {
                    pattern,
                    replacement,
                    case,
                } if pattern.is_match(dn) => {
                    let mapped = pattern.replace(dn, replacement.as_str()).to_string();
                    return Ok(match case {
                        Some('L') => mapped.to_lowercase(),
                        Some('U') => mapped.to_uppercase(),
                        _ => mapped,
                    });
                }
                Rule::Rewrite { .. } => {}
            }
        }
        Err(MappingError(format!(
            "no ssl.principal.mapping.rules rule matches {dn:?}"
        )))
    }

    /// The principal of a certificate chain's leaf.
    pub fn principal(&self, leaf_der: &[u8]) -> Result<String, MappingError> {
        Ok(super::user_principal(&self.map(&subject_dn(leaf_der)?)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's SslPrincipalMapperTest cases.
    #[test]
    fn rules_map_as_kafkas() {
        let m = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]*),OU=(.*?),O=.*$/$1@$2/, DEFAULT",
        )
        .unwrap();
        assert_eq!(m.map("CN=Duke,OU=ServiceUsers,O=Org,C=US").unwrap(), "duke");
        assert_eq!(
            m.map("CN=Duke,OU=JavaSoft,O=Sun Microsystems").unwrap(),
            "Duke@JavaSoft"
        );
        assert_eq!(m.map("CN=Plain").unwrap(), "CN=Plain");
        let only = PrincipalMapper::parse("RULE:^CN=(.*)$/$1/U").unwrap();
        assert_eq!(only.map("CN=alice").unwrap(), "ALICE");
        assert!(only.map("O=nobody").is_err(), "no rule matches");
        let slash = PrincipalMapper::parse(r"RULE:^CN=(.*)\/x$/$1/").unwrap();
        assert_eq!(slash.map("CN=a/x").unwrap(), "a");
        for bad in [
            "",
            "RULE:x",
            "RULE:x/y",
            "NOPE",
            "DEFAULT DEFAULT",
            "RULE:(/x/",
        ] {
            assert!(PrincipalMapper::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn values_are_escaped_as_rfc_2253_says() {
        assert_eq!(escape("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape(" lead"), "\\ lead");
        assert_eq!(escape("#x"), "\\#x");
        assert_eq!(escape("plain"), "plain");
    }

    #[test]
    fn a_certificates_subject_is_written_most_specific_first() {
        let mut params = rcgen::CertificateParams::new(vec!["client".into()]).unwrap();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CountryName, "US");
        dn.push(rcgen::DnType::OrganizationName, "Acme, Inc");
        dn.push(rcgen::DnType::CommonName, "alice");
        params.distinguished_name = dn;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            subject_dn(cert.der()).unwrap(),
            "CN=alice,O=Acme\\, Inc,C=US"
        );
        let m = PrincipalMapper::parse("DEFAULT").unwrap();
        assert_eq!(
            m.principal(cert.der()).unwrap(),
            "User:CN=alice,O=Acme\\, Inc,C=US"
        );
    }
}
