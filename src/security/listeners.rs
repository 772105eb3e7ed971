//! Kafka's listener model: `listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093`,
//! each a security protocol and an address. `kafka.listen` stays the shorthand for one
//! PLAINTEXT listener (used when `listeners` is not set).

use std::net::SocketAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityProtocol {
    Plaintext,
    SaslPlaintext,
}

impl SecurityProtocol {
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
        }
    }

    /// Whether a connection must authenticate (SASL) before anything else.
    pub fn needs_sasl(self) -> bool {
        matches!(self, SecurityProtocol::SaslPlaintext)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaListener {
    pub protocol: SecurityProtocol,
    pub addr: SocketAddr,
}

impl std::fmt::Display for KafkaListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.protocol.name(), self.addr)
    }
}

/// Why a `listeners` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ListenersError(pub String);

fn resolve(addr: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or_else(|| "resolves to no address".to_string())
}

/// Parses a `listeners` value (empty: none, so `kafka.listen` applies).
pub fn parse(value: &str) -> Result<Vec<KafkaListener>, ListenersError> {
    parse_entries(value).map_err(ListenersError)
}

fn parse_entries(value: &str) -> Result<Vec<KafkaListener>, String> {
    let mut out: Vec<KafkaListener> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, addr) = entry
            .split_once("://")
            .ok_or_else(|| format!("{entry:?}: expected PROTOCOL://HOST:PORT"))?;
        let protocol = match name {
            "PLAINTEXT" => SecurityProtocol::Plaintext,
            "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
            "SSL" | "SASL_SSL" => {
                return Err(format!("{entry:?}: {name} (TLS) is not supported yet"))
            }
            other => {
                return Err(format!(
                    "{entry:?}: unknown security protocol {other:?} (PLAINTEXT or SASL_PLAINTEXT)"
                ))
            }
        };
        let addr = resolve(addr).map_err(|e| format!("{entry:?}: {e}"))?;
        if out.iter().any(|l| l.addr.port() == addr.port()) {
            return Err(format!("{entry:?}: port {} is listed twice", addr.port()));
        }
        out.push(KafkaListener { protocol, addr });
    }
    Ok(out)
}

/// `listeners` written back (the settings' describe output).
pub fn format(listeners: &[KafkaListener]) -> String {
    let parts: Vec<String> = listeners.iter().map(|l| l.to_string()).collect();
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_parse_as_kafka_writes_them() {
        let l = parse("PLAINTEXT://127.0.0.1:9092, SASL_PLAINTEXT://127.0.0.1:9093").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(
            format(&l),
            "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093"
        );
        assert!(parse("").unwrap().is_empty());
        assert!(parse("127.0.0.1:9092").is_err());
        assert!(parse("FOO://127.0.0.1:9092").is_err());
        assert!(parse("SASL_SSL://127.0.0.1:9093")
            .unwrap_err()
            .0
            .contains("not supported yet"));
        assert!(parse("PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9092").is_err());
    }
}
