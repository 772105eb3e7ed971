//! Kafka's listener model: `listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093`,
//! each a security protocol and an address. `kafka.listen` stays the shorthand for one
//! PLAINTEXT listener (used when `listeners` is not set).

use std::net::{IpAddr, SocketAddr};

/// Whether an address is loopback, counting IPv4 loopback seen through an IPv6 socket
/// (`::ffff:127.0.0.1`, what a `[::]` listener reports for an IPv4 peer).
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SecurityProtocol {
    #[default]
    Plaintext,
    SaslPlaintext,
    Ssl,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslSsl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether a connection must authenticate (SASL) before anything else.
    pub fn needs_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    /// Whether the connection runs under TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Safe off loopback: encrypted and authenticated (SASL_SSL, or SSL when client
    /// certificates are required).
    pub fn is_secure(self, client_auth: ClientAuth) -> bool {
        match self {
            SecurityProtocol::SaslSsl => true,
            SecurityProtocol::Ssl => client_auth == ClientAuth::Required,
            _ => false,
        }
    }
}

/// Kafka's `ssl.client.auth`: whether a TLS listener asks clients for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientAuth {
    #[default]
    None,
    /// Asked for; a client without one is anonymous.
    Requested,
    /// A client without a certificate the truststore's CAs signed is refused.
    Required,
}

impl ClientAuth {
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Requested => "requested",
            ClientAuth::Required => "required",
        }
    }

    pub fn from_name(name: &str) -> Option<ClientAuth> {
        [
            ClientAuth::None,
            ClientAuth::Requested,
            ClientAuth::Required,
        ]
        .into_iter()
        .find(|c| c.name() == name)
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

fn resolve(addr: &str) -> Result<SocketAddr, ListenersError> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()
        .map_err(|e| ListenersError(e.to_string()))?
        .next()
        .ok_or_else(|| ListenersError("resolves to no address".to_string()))
}

/// Parses a `listeners` value (empty: none, so `kafka.listen` applies).
pub fn parse(value: &str) -> Result<Vec<KafkaListener>, ListenersError> {
    let bad = |why: String| ListenersError(why);
    let mut out: Vec<KafkaListener> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, addr) = entry
            .split_once("://")
            .ok_or_else(|| bad(format!("{entry:?}: expected PROTOCOL://HOST:PORT")))?;
        let protocol = SecurityProtocol::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                bad(format!(
                    "{entry:?}: unknown security protocol {name:?} (PLAINTEXT, SSL, \
                     SASL_PLAINTEXT or SASL_SSL)"
                ))
            })?;
        let addr = resolve(addr).map_err(|e| bad(format!("{entry:?}: {e}")))?;
        if out.iter().any(|l| l.addr.port() == addr.port()) {
            let why = format!("{entry:?}: port {} is listed twice", addr.port());
            return Err(bad(why));
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
    fn ipv4_loopback_through_an_ipv6_socket_is_loopback() {
        for (ip, want) in [
            ("127.0.0.1", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("::ffff:10.0.0.1", false),
            ("10.0.0.1", false),
        ] {
            assert_eq!(is_loopback(ip.parse().unwrap()), want, "{ip}");
        }
    }

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
        assert_eq!(
            parse("SASL_SSL://127.0.0.1:9093").unwrap()[0].protocol,
            SecurityProtocol::SaslSsl
        );
        assert!(parse("PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9092").is_err());
    }
}
