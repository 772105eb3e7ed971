//! Which protocol answers at an address, so every tool works whichever listener it is
//! pointed at: a native ApiVersions request is sent (api key 0, no body). The native
//! listener answers it; a Kafka listener reads it as Produce v0, which it does not serve,
//! and closes the connection without a word (as Kafka brokers do). The probe is chosen so
//! that it changes nothing on either listener.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use super::native_blocking::{CallError, NativeBlocking};
use crate::kafka::blocking_client::BlockingClient;
use crate::protocol::{Request, ResponseBody};
use crate::security::client::ClientSecurity;

#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    Native,
    /// Closed without an answer: a Kafka listener (shardlog's or a Kafka broker's).
    Kafka,
}

/// Asks `addr` which protocol it speaks (one round trip on a connection of its own).
pub fn probe(addr: &str, timeout: Duration) -> Result<Protocol, String> {
    let started = Instant::now();
    let mut c = NativeBlocking::connect(addr, timeout)?;
    let answer = match c.call(&Request::ApiVersions) {
        Ok(ResponseBody::ApiVersions(_)) => Protocol::Native,
        Err(CallError::Io(e))
            if matches!(
                e.kind(),
                ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
            ) =>
        {
            Protocol::Kafka
        }
        Err(CallError::Io(e))
            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
        {
            let ms = timeout.as_millis();
            return Err(format!(
                "no answer from {addr} within {ms} ms (raise it with --timeout-ms)"
            ));
        }
        Err(CallError::Io(e)) => return Err(format!("{addr} does not answer ({e})")),
        Ok(_) | Err(_) => {
            return Err(format!(
                "{addr} answers neither shardlog's native protocol nor Kafka's"
            ))
        }
    };
    tracing::debug!(
        addr,
        ?answer,
        micros = started.elapsed().as_micros() as u64,
        "protocol probed"
    );
    Ok(answer)
}

/// The native listener of the shardlog server whose Kafka listener is at `kafka_addr`:
/// its `listen` setting (DescribeConfigs of the broker), at the host the caller used.
pub fn native_address_of(kafka_addr: &str, timeout: Duration) -> Option<String> {
    let mut c = BlockingClient::connect_with_timeout(kafka_addr, timeout).ok()?;
    native_listener_of(&mut c, kafka_addr).map(|(addr, _)| addr)
}

/// Through a connected (and, on a secured listener, authenticated) Kafka client of the
/// server at `kafka_addr`: its native listener's address, at the host the caller used, and
/// its security protocol (`native.security.protocol`).
pub fn native_listener_of(c: &mut BlockingClient, kafka_addr: &str) -> Option<(String, String)> {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::{
        ApiKey as K, DescribeConfigsRequest, RequestKind, ResponseKind,
    };
    let keys = ["listen", "native.security.protocol"].map(|k| k.to_string().into());
    let me = broker_id_at(c, kafka_addr).to_string();
    let r =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(me.into())
            .with_configuration_keys(Some(keys.to_vec()))]);
    let ResponseKind::DescribeConfigs(r) = c
        .call(K::DescribeConfigs, 1, &RequestKind::DescribeConfigs(r))
        .ok()?
    else {
        return None;
    };
    let configs = &r.results.first()?.configs;
    let value = |key: &str| {
        let c = configs.iter().find(|c| c.name.as_str() == key)?;
        Some(c.value.as_ref()?.to_string())
    };
    let listen = value("listen")?;
    let protocol = value("native.security.protocol").unwrap_or_else(|| "PLAINTEXT".into());
    let port = listen.rsplit_once(':')?.1;
    let host = kafka_addr.rsplit_once(':')?.0;
    Some((format!("{host}:{port}"), protocol))
}

/// The broker id of the server at `kafka_addr` (a broker resource names it): the broker
/// Metadata lists at that port (a single node is broker 0, as is one that lists none).
fn broker_id_at(c: &mut BlockingClient, kafka_addr: &str) -> i32 {
    use kafka_protocol::messages::{ApiKey as K, MetadataRequest, RequestKind, ResponseKind};
    let port: Option<i32> = kafka_addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok());
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    let answer = c.call(K::Metadata, 1, &RequestKind::Metadata(request));
    let Ok(ResponseKind::Metadata(r)) = answer else {
        return 0;
    };
    let at_port = r.brokers.iter().filter(|b| Some(b.port) == port);
    let ids: Vec<i32> = at_port.map(|b| b.node_id.0).collect();
    // Nodes on one host listen on different ports: one broker answers at this port.
    match ids[..] {
        [id] => id,
        _ => 0,
    }
}

/// The Kafka listener of the shardlog server whose native listener is at `native_addr`
/// (DescribeListeners, reached under the client's security): the one under the client's
/// own security protocol, so the same credentials serve both. A native listener that does
/// not take the client's security (a PLAINTEXT one beside a SASL Kafka listener) is asked
/// without it: the listeners are no secret (Kafka's Metadata names its brokers too). Says
/// which listeners there are when none matches.
pub fn kafka_listener_of(
    native_addr: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<String, String> {
    let mut c =
        NativeBlocking::connect_secure(native_addr, security, timeout).or_else(
            |e| match security.protocol {
                crate::security::SecurityProtocol::Plaintext => Err(e),
                _ => NativeBlocking::connect(native_addr, timeout),
            },
        )?;
    let listeners = match c.call(&Request::DescribeListeners) {
        Ok(ResponseBody::DescribeListeners(listeners)) => listeners,
        Ok(other) => return Err(format!("unexpected answer to DescribeListeners: {other:?}")),
        Err(e) => return Err(format!("{native_addr} did not list its listeners: {e}")),
    };
    let wanted = security.protocol.name();
    let kafka: Vec<_> = listeners.iter().filter(|l| l.protocol == "kafka").collect();
    if let Some(l) = kafka.iter().find(|l| l.security_protocol == wanted) {
        return Ok(format!("{}:{}", l.host, l.port));
    }
    let named: Vec<String> = kafka
        .iter()
        .map(|l| format!("{}:{} ({})", l.host, l.port, l.security_protocol))
        .collect();
    Err(match named.is_empty() {
        true => format!("{native_addr} is shardlog's native listener and the server has no Kafka listener (`listeners`)"),
        false => format!("{native_addr} is shardlog's native listener; its Kafka listeners are {}, none under security.protocol={wanted}: point -b at one and give its security with --command-config", named.join(", ")),
    })
}

/// Whether `addr` answers plaintext with a TLS alert record (an SSL or SASL_SSL listener
/// reached without TLS): content type 21, version 3.x.
pub fn speaks_tls(addr: &str, timeout: Duration) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    // A native ApiVersions frame: garbage to a TLS server, which answers with an alert.
    if s.write_all(&[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]).is_err() {
        return false;
    }
    let mut head = [0u8; 2];
    s.read_exact(&mut head).is_ok() && head == [0x15, 0x03]
}

/// A Kafka-protocol client of the server at `server`. Given the native listener
/// (shardlog's default address, as for every tool), it asks the server for its Kafka
/// listener under the same security and uses that, saying so on stderr.
pub fn kafka_client_of(
    bootstrap: &str,
    config: &super::client_config::ClientConfigArgs,
    timeout_ms: u64,
) -> Result<crate::kafka::blocking_client::BlockingClient, String> {
    let mut failures = Vec::new();
    for server in super::bootstrap_list(bootstrap) {
        match kafka_client_of_one(server, config, timeout_ms) {
            Ok(client) => return Ok(client),
            Err(e) => failures.push((server, e)),
        }
    }
    Err(super::bootstrap_failures(failures))
}

fn kafka_client_of_one(
    server: &str,
    config: &super::client_config::ClientConfigArgs,
    timeout_ms: u64,
) -> Result<crate::kafka::blocking_client::BlockingClient, String> {
    use super::secure_stream::kafka_client;
    let security = config.security()?;
    let timeout = Duration::from_millis(timeout_ms);
    let plaintext = security.protocol == crate::security::SecurityProtocol::Plaintext;
    let native = plaintext && probe(server, timeout) == Ok(Protocol::Native);
    let direct = match native {
        true => Err(String::new()),
        false => kafka_client(server, &security, timeout),
    };
    let Err(kafka_err) = direct else {
        return direct;
    };
    // A secured native listener only shows itself by failing Kafka's handshake.
    let kafka = kafka_listener_of(server, &security, timeout).map_err(|e| match native {
        true => e,
        false => format!("{server}: {kafka_err} (as Kafka's protocol); {e}"),
    })?;
    eprintln!("note: {server} is shardlog's native listener; using its Kafka listener {kafka}");
    kafka_client(&kafka, &security, timeout)
}
