//! Which protocol answers at an address, so every tool works whichever listener it is
//! pointed at: a native ApiVersions request is sent (api key 0, no body). The native
//! listener answers it; a Kafka listener reads it as Produce v0, which it does not serve,
//! and closes the connection without a word (as Kafka brokers do). The probe is chosen so
//! that it changes nothing on either listener.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::kafka::blocking_client::BlockingClient;
use crate::protocol::{ApiKey, Request, Response, ResponseBody};

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
    let mut s = connect(addr, timeout)?;
    s.write_all(&Request::ApiVersions.encode_frame(1))
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut size = [0u8; 4];
    let answer = match s.read_exact(&mut size) {
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Protocol::Kafka,
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Protocol::Kafka,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            let ms = timeout.as_millis();
            return Err(format!(
                "no answer from {addr} within {ms} ms (raise it with --timeout-ms)"
            ));
        }
        Err(e) => return Err(format!("{addr} does not answer ({e})")),
        Ok(()) => native_answer(&mut s, size, addr)?,
    };
    tracing::debug!(
        addr,
        ?answer,
        micros = started.elapsed().as_micros() as u64,
        "protocol probed"
    );
    Ok(answer)
}

fn connect(addr: &str, timeout: Duration) -> Result<TcpStream, String> {
    use std::net::ToSocketAddrs;
    let target = addr
        .to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: no address"))?;
    let s = TcpStream::connect_timeout(&target, timeout)
        .map_err(|e| format!("cannot connect to a shardlog server at {addr}: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// A reply came: it must be a native ApiVersions answer.
fn native_answer(s: &mut TcpStream, size: [u8; 4], addr: &str) -> Result<Protocol, String> {
    let len = i32::from_be_bytes(size);
    let not_shardlog = || format!("{addr} answers neither shardlog's native protocol nor Kafka's");
    if !(0..=1 << 20).contains(&len) {
        return Err(not_shardlog());
    }
    let mut body = vec![0u8; len as usize];
    s.read_exact(&mut body).map_err(|_| not_shardlog())?;
    match Response::decode(ApiKey::ApiVersions, &Bytes::from(body)) {
        Ok(Response {
            result: Ok(ResponseBody::ApiVersions(_)),
            ..
        }) => Ok(Protocol::Native),
        _ => Err(not_shardlog()),
    }
}

/// The native listener of the shardlog server whose Kafka listener is at `kafka_addr`:
/// its `listen` setting (DescribeConfigs of the broker), at the host the caller used.
pub fn native_address_of(kafka_addr: &str, timeout: Duration) -> Option<String> {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::{
        ApiKey as K, DescribeConfigsRequest, RequestKind, ResponseKind,
    };
    let mut c = BlockingClient::connect_with_timeout(kafka_addr, timeout).ok()?;
    let r =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name("0".to_string().into())
            .with_configuration_keys(Some(vec!["listen".to_string().into()]))]);
    let ResponseKind::DescribeConfigs(r) = c
        .call(K::DescribeConfigs, 1, &RequestKind::DescribeConfigs(r))
        .ok()?
    else {
        return None;
    };
    let listen = r
        .results
        .first()?
        .configs
        .first()?
        .value
        .as_ref()?
        .to_string();
    let port = listen.rsplit_once(':')?.1;
    let host = kafka_addr.rsplit_once(':')?.0;
    Some(format!("{host}:{port}"))
}
