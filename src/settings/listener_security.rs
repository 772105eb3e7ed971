//! The rules of the listeners' security: Kafka's per-listener keys
//! (`listener.name.<name>.<key>`, `<name>` the listener's name in lower case: `ssl`,
//! `sasl_ssl`, ...), each listener's effective settings, and the checks that a listener
//! can start (a TLS listener has a keystore; required client certificates need a
//! truststore; what is not encrypted and authenticated stays on loopback).

use super::{bad, server_key, ServerConfig, SettingsError};
use crate::security::listeners::{is_loopback, ClientAuth};
use crate::security::KafkaListener;

pub const PREFIX: &str = "listener.name.";
/// The native protocol's listener, as `listener.name.` names it.
pub const NATIVE: &str = "native";
/// The metrics endpoint, as `listener.name.` names it.
pub const METRICS: &str = "metrics";

/// The keys a listener may set for itself.
const PER_LISTENER: &[&str] = &[
    "ssl.client.auth",
    "ssl.keystore.location",
    "ssl.truststore.location",
    "ssl.principal.mapping.rules",
    "sasl.enabled.mechanisms",
    "max.connections",
    "max.connections.per.shard",
    "max.connections.per.ip",
];

/// A listener's name as `listener.name.` spells it.
pub fn listener_name(l: &KafkaListener) -> String {
    l.protocol.name().to_ascii_lowercase()
}

impl ServerConfig {
    /// `rest`: what follows `listener.name.`, i.e. `<name>.<key>`.
    pub(super) fn set_listener_key(&mut self, rest: &str, v: &str) -> Result<(), SettingsError> {
        let full = format!("{PREFIX}{rest}");
        let (name, key) = rest
            .split_once('.')
            .ok_or_else(|| bad(&full, "expected listener.name.<listener>.<key>"))?;
        if !PER_LISTENER.contains(&key) {
            return Err(bad(
                &full,
                format!(
                    "{key} cannot be set per listener (only {})",
                    PER_LISTENER.join(", ")
                ),
            ));
        }
        // Checked now, with the key's own parser.
        (server_key(key)?.set)(&mut self.clone(), v).map_err(|e| bad(&full, e))?;
        self.listener_overrides
            .retain(|(n, k, _)| !(n == name && k == key));
        self.listener_overrides
            .push((name.to_string(), key.to_string(), v.to_string()));
        Ok(())
    }

    /// The settings in force on Kafka listener `l`: the server's, with its own keys over them.
    pub fn for_listener(&self, l: &KafkaListener) -> ServerConfig {
        self.with_overrides(&listener_name(l))
    }

    /// The settings in force on the native listener (`listener.name.native.`).
    pub fn for_native(&self) -> ServerConfig {
        self.with_overrides(NATIVE)
    }

    /// The settings in force on the metrics endpoint (`listener.name.metrics.`).
    pub fn for_metrics(&self) -> ServerConfig {
        self.with_overrides(METRICS)
    }

    /// The native listener (`listen`) with its security protocol.
    pub fn native_listener(&self) -> KafkaListener {
        KafkaListener {
            protocol: self.native_security_protocol,
            addr: self.listen,
        }
    }

    fn with_overrides(&self, name: &str) -> ServerConfig {
        let mut cfg = self.clone();
        for (_, key, value) in self
            .listener_overrides
            .iter()
            .filter(|(n, _, _)| *n == name)
        {
            let set = server_key(key).expect("checked when set").set;
            set(&mut cfg, value).expect("checked when set");
        }
        // Only PER_LISTENER keys reach here: a listener's security and connection limits,
        // never the node's layout.
        assert_eq!(cfg.shards, self.shards);
        assert_eq!(cfg.listen, self.listen);
        cfg
    }

    /// Every listener can start, and the unsafe ones only where the operator allows.
    pub(super) fn validate_listener_security(&self) -> Result<(), SettingsError> {
        let listeners = self.kafka_listeners();
        for (name, key, _) in &self.listener_overrides {
            let known = [NATIVE, METRICS].contains(&name.as_str());
            if !known && !listeners.iter().any(|l| listener_name(l) == *name) {
                return Err(bad(
                    &format!("{PREFIX}{name}.{key}"),
                    format!("there is no listener {name}"),
                ));
            }
        }
        for l in &listeners {
            self.for_listener(l).validate_tls(l)?;
        }
        self.for_native().validate_tls(&self.native_listener())?;
        if let Some(addr) = self.metrics_listen {
            let protocol = self.metrics_security_protocol;
            self.for_metrics()
                .validate_tls(&KafkaListener { protocol, addr })?;
        }
        self.validate_insecure_listeners()
    }

    fn validate_tls(&self, l: &KafkaListener) -> Result<(), SettingsError> {
        if !l.protocol.is_tls() {
            return Ok(());
        }
        if self.ssl_keystore_location.is_none() {
            let why = format!("listener {l} needs a PEM keystore (certificate chain and key)");
            return Err(bad("ssl.keystore.location", why));
        }
        if self.ssl_client_auth != ClientAuth::None && self.ssl_truststore_location.is_none() {
            let why =
                format!("listener {l} asks for client certificates: name the CAs that sign them");
            return Err(bad("ssl.truststore.location", why));
        }
        Ok(())
    }

    /// Listeners that are not both encrypted and authenticated stay on loopback unless
    /// `allow.insecure.listeners` is set.
    fn validate_insecure_listeners(&self) -> Result<(), SettingsError> {
        if self.allow_insecure_listeners {
            return Ok(());
        }
        let native = self.native_listener();
        let native_secure = native.protocol.is_secure(self.for_native().ssl_client_auth);
        let native = [("listen", format!("native {native}"), self.listen)];
        let native = native.into_iter().filter(|_| !native_secure);
        let kafka = self.kafka_listeners().into_iter().filter(|l| {
            let client_auth = self.for_listener(l).ssl_client_auth;
            !l.protocol.is_secure(client_auth)
        });
        let kafka = kafka.map(|l| (self.kafka_listeners_key(), l.to_string(), l.addr));
        // The metrics endpoint has no authentication of its own: PLAINTEXT stays on loopback.
        let metrics = (self.metrics_listen)
            .filter(|_| !self.metrics_security_protocol.is_tls())
            .map(|addr| {
                (
                    "metrics.listen",
                    format!("metrics PLAINTEXT://{addr}"),
                    addr,
                )
            });
        for (key, name, addr) in native.chain(kafka).chain(metrics) {
            if !is_loopback(addr.ip()) {
                return Err(bad(
                    key,
                    format!(
                        "listener {name} is not both encrypted and authenticated (SASL_SSL, or \
                         SSL with ssl.client.auth=required) and not on loopback; set \
                         allow.insecure.listeners=true if you mean to expose it"
                    ),
                ));
            }
        }
        Ok(())
    }
}
