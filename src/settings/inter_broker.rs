//! How this node talks to the other nodes of its cluster, with Kafka's keys: the listener
//! it reaches them at (`inter.broker.listener.name`: PLAINTEXT, SSL, SASL_PLAINTEXT or
//! SASL_SSL, one of its own listeners, as every node is configured alike), the SASL
//! mechanism (`sasl.mechanism.inter.broker.protocol`) and its own login
//! (`sasl.jaas.config`, the JAAS line Kafka's brokers take); the client side of that
//! listener's security, built from the node's own TLS files.

use super::{bad, ServerConfig, SettingsError};
use crate::security::client::ClientSecurity;
use crate::security::{SaslMechanism, SecurityProtocol};

/// The inter-broker settings (cluster mode).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterBroker {
    /// The listener the nodes speak to each other on (default PLAINTEXT).
    pub listener: SecurityProtocol,
    /// SASL listeners: the mechanism; `None` takes the listener's first enabled one.
    pub sasl_mechanism: Option<SaslMechanism>,
    /// SASL listeners: this node's user and password.
    pub login: Option<JaasLogin>,
}

/// A login from a JAAS line (`<module> required username="..." password="...";`).
#[derive(Clone, PartialEq, Eq)]
pub struct JaasLogin {
    pub module: LoginModule,
    pub username: String,
    pub password: String,
}

/// The password never reaches a log or a described config.
impl std::fmt::Debug for JaasLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JaasLogin")
            .field("module", &self.module)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Kafka's login modules for the mechanisms served here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginModule {
    Plain,
    Scram,
}

const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// What `get` shows for a set login (Kafka describes sensitive configs without a value).
pub const HIDDEN: &str = "[hidden]";

impl LoginModule {
    fn serves(self, mechanism: SaslMechanism) -> bool {
        matches!(
            (self, mechanism),
            (LoginModule::Plain, SaslMechanism::Plain)
                | (LoginModule::Scram, SaslMechanism::Scram(_))
        )
    }
}

/// Parses `sasl.jaas.config`: a login module, `required`, then `key="value"` options
/// ending with `;`. Only `username` and `password` are read; both are needed.
pub fn parse_jaas(text: &str) -> Result<Option<JaasLogin>, SettingsError> {
    let fail = |why: &str| bad("sasl.jaas.config", why);
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let body = text
        .strip_suffix(';')
        .ok_or_else(|| fail("must end with ';'"))?;
    let (module, rest) = body
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((body, ""));
    let module = match module {
        PLAIN_MODULE => LoginModule::Plain,
        SCRAM_MODULE => LoginModule::Scram,
        _ => {
            return Err(fail(&format!(
                "login module {module:?}: {PLAIN_MODULE} or {SCRAM_MODULE}"
            )))
        }
    };
    let options = rest
        .trim()
        .strip_prefix("required")
        .ok_or_else(|| fail("expected 'required' after the login module"))?;
    let options = parse_options(options)?;
    let option = |name: &str| {
        options
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let username = option("username").ok_or_else(|| fail("needs username=\"...\""))?;
    let password = option("password").ok_or_else(|| fail("needs password=\"...\""))?;
    if username.is_empty() {
        return Err(fail("the username is empty"));
    }
    let login = JaasLogin {
        module,
        username,
        password,
    };
    assert!(!login.username.is_empty());
    Ok(Some(login))
}

/// `key="value"` pairs separated by white space; a value's `\"` and `\\` are escapes.
fn parse_options(text: &str) -> Result<Vec<(String, String)>, SettingsError> {
    let fail = |why: String| bad("sasl.jaas.config", why);
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .ok_or_else(|| fail(format!("{rest:?} is not key=\"value\"")))?;
        let quoted = after
            .strip_prefix('"')
            .ok_or_else(|| fail(format!("the value of {key} must be quoted")))?;
        let (value, after) = quoted_value(quoted)
            .ok_or_else(|| fail(format!("the value of {key} has no closing quote")))?;
        // Each step takes at least `="` off the text.
        assert!(after.len() < rest.len(), "the options shrink");
        out.push((key.trim().to_string(), value));
        rest = after.trim_start();
    }
    Ok(out)
}

/// The value up to its closing quote, unescaped, and what follows the quote.
fn quoted_value(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &text[i + 1..])),
            '\\' => value.push(chars.next()?.1),
            c => value.push(c),
        }
    }
    None
}

impl ServerConfig {
    /// The inter-broker listener is one of this node's, and a SASL one has a mechanism it
    /// enables and a login for it; a TLS one has the CAs that sign the other nodes'
    /// certificates (`ssl.truststore.location`).
    pub(super) fn validate_inter_broker(&self) -> Result<(), SettingsError> {
        let ib = &self.inter_broker;
        let key = "inter.broker.listener.name";
        let listener = self
            .kafka_listeners()
            .into_iter()
            .find(|l| l.protocol == ib.listener);
        let Some(listener) = listener.filter(|_| self.cluster.enabled()) else {
            return match self.cluster.enabled() {
                true => Err(bad(
                    key,
                    format!("{} is not one of this node's listeners", ib.listener.name()),
                )),
                false => Ok(()),
            };
        };
        let settings = self.for_listener(&listener);
        if ib.listener.is_tls() && settings.ssl_truststore_location.is_none() {
            let why = "TLS between nodes needs ssl.truststore.location (the CAs that sign the nodes' certificates)";
            return Err(bad(key, why));
        }
        if !ib.listener.needs_sasl() {
            return Ok(());
        }
        let mechanism = self.inter_broker_mechanism(&settings);
        let key = "sasl.mechanism.inter.broker.protocol";
        if !settings.sasl_enabled_mechanisms.contains(&mechanism) {
            let why = format!("{} is not enabled on listener {listener}", mechanism.name());
            return Err(bad(key, why));
        }
        match &ib.login {
            None => Err(bad(
                "sasl.jaas.config",
                format!(
                    "SASL between nodes ({}) needs this node's login",
                    mechanism.name()
                ),
            )),
            Some(login) if !login.module.serves(mechanism) => Err(bad(
                "sasl.jaas.config",
                format!("its login module does not serve {}", mechanism.name()),
            )),
            Some(_) => Ok(()),
        }
    }

    /// The mechanism this node authenticates with: the one named, or the listener's first.
    fn inter_broker_mechanism(&self, settings: &ServerConfig) -> SaslMechanism {
        let first = settings.sasl_enabled_mechanisms.first().copied();
        let mechanism = self.inter_broker.sasl_mechanism.or(first);
        // `sasl.enabled.mechanisms` is never empty (its own check).
        mechanism.expect("a listener enables a mechanism")
    }

    /// How this node connects to the others: the inter-broker listener's protocol, its TLS
    /// files (the truststore trusts the others; the keystore is this node's certificate,
    /// for `ssl.client.auth`) and this node's SASL login.
    pub fn inter_broker_client(&self) -> ClientSecurity {
        let protocol = self.inter_broker.listener;
        let listener = self
            .kafka_listeners()
            .into_iter()
            .find(|l| l.protocol == protocol);
        let settings = listener.map_or_else(|| self.clone(), |l| self.for_listener(&l));
        let tls = protocol.is_tls();
        let sasl = (self.inter_broker.login.as_ref()).filter(|_| protocol.needs_sasl());
        let sasl = sasl.map(|login| {
            let mechanism = self.inter_broker_mechanism(&settings);
            (mechanism, login.username.clone(), login.password.clone())
        });
        let keystore = settings.ssl_keystore_location.clone().filter(|_| tls);
        let client = ClientSecurity {
            protocol,
            sasl,
            ca_location: settings.ssl_truststore_location.clone().filter(|_| tls),
            certificate: keystore.map(|k| (k.clone(), k)),
        };
        // What `validate_inter_broker` made sure of, on a node in cluster mode.
        if self.cluster.enabled() {
            let sasl = client.sasl.is_some();
            assert_eq!(sasl, protocol.needs_sasl(), "a login where SASL is spoken");
            let trusted = client.ca_location.is_some();
            assert_eq!(trusted, tls, "a truststore where TLS is spoken");
        }
        client
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaas_lines_give_the_login_and_bad_ones_say_why() {
        let line = format!(r#"{SCRAM_MODULE} required username="broker" password="p\"w;x";"#);
        let login = parse_jaas(&line).unwrap().unwrap();
        assert_eq!(
            (login.module, login.username.as_str()),
            (LoginModule::Scram, "broker")
        );
        assert_eq!(login.password, "p\"w;x");
        assert!(
            !format!("{login:?}").contains("p\\\"w"),
            "no password in Debug"
        );
        assert_eq!(parse_jaas("  ").unwrap(), None);
        for (bad_line, why) in [
            (
                format!(r#"{SCRAM_MODULE} required username="b" password="p""#),
                "end with",
            ),
            (
                r#"com.example.Login required username="b" password="p";"#.to_string(),
                "login module",
            ),
            (
                format!(r#"{PLAIN_MODULE} username="b" password="p";"#),
                "required",
            ),
            (
                format!(r#"{PLAIN_MODULE} required username="b";"#),
                "password",
            ),
            (
                format!(r#"{PLAIN_MODULE} required username=b password="p";"#),
                "quoted",
            ),
            (
                format!(r#"{PLAIN_MODULE} required username="b password=p;"#),
                "closing quote",
            ),
        ] {
            let e = parse_jaas(&bad_line).unwrap_err().to_string();
            assert!(e.contains(why), "{bad_line}: {e}");
        }
    }

    fn cluster_node(extra: &[(&str, &str)]) -> ServerConfig {
        let mut c = ServerConfig::default();
        c.set("shards", "1").unwrap();
        c.set("cluster.etcd.endpoints", "http://127.0.0.1:2379")
            .unwrap();
        c.set("broker.id", "1").unwrap();
        for (k, v) in extra {
            c.set(k, v).unwrap();
        }
        c
    }

    /// Each rule of the inter-broker listener, by the key it names.
    #[test]
    fn the_inter_broker_listener_is_checked_against_the_nodes_own() {
        let jaas = format!(r#"{SCRAM_MODULE} required username="broker" password="s";"#);
        let sasl_ssl = [
            ("listeners", "SASL_SSL://127.0.0.1:9093"),
            ("ssl.keystore.location", "/keys/node.pem"),
            ("ssl.truststore.location", "/keys/ca.pem"),
            ("inter.broker.listener.name", "SASL_SSL"),
            ("sasl.jaas.config", jaas.as_str()),
        ];
        let good = cluster_node(&sasl_ssl);
        good.validate().unwrap();
        let client = good.inter_broker_client();
        assert_eq!(client.protocol, SecurityProtocol::SaslSsl);
        let (mechanism, user, _) = client.sasl.clone().unwrap();
        assert_eq!(
            (mechanism.name(), user.as_str()),
            ("SCRAM-SHA-256", "broker")
        );
        assert_eq!(client.ca_location.unwrap().to_str(), Some("/keys/ca.pem"));
        assert!(
            client.certificate.is_some(),
            "the node's own certificate for mTLS"
        );
        assert_eq!(
            good.described()
                .iter()
                .find(|d| d.0 == "sasl.jaas.config")
                .unwrap()
                .1,
            HIDDEN
        );

        let refused = |changes: &[(&str, &str)]| {
            let mut c = cluster_node(&sasl_ssl);
            for (k, v) in changes {
                c.set(k, v).unwrap();
            }
            c.validate().unwrap_err().to_string()
        };
        let cases: [(&[(&str, &str)], &str); 4] = [
            (
                &[("inter.broker.listener.name", "SSL")],
                "not one of this node's listeners",
            ),
            (&[("sasl.jaas.config", "")], "needs this node's login"),
            (
                &[("sasl.mechanism.inter.broker.protocol", "PLAIN")],
                "not enabled",
            ),
            (
                &[("ssl.truststore.location", "")],
                "ssl.truststore.location",
            ),
        ];
        for (changes, why) in cases {
            let e = refused(changes);
            assert!(e.contains(why), "{changes:?}: {e}");
        }
        // A PLAIN login for a SCRAM mechanism.
        let plain = format!(r#"{PLAIN_MODULE} required username="broker" password="s";"#);
        assert!(refused(&[("sasl.jaas.config", &plain)]).contains("does not serve"));
        // The default stays as it was: PLAINTEXT between nodes, nothing else needed.
        cluster_node(&[("listeners", "PLAINTEXT://127.0.0.1:9092")])
            .validate()
            .unwrap();
    }
}
