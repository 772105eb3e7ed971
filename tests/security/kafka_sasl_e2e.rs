//! SASL authentication on a SASL_PLAINTEXT Kafka listener of the real `shardlog serve`
//! binary, next to a PLAINTEXT one (Kafka's `listeners`): users set offline with
//! `shardlog users`, logins with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN from confluent-kafka
//! and kafka-python, refusals of wrong passwords, unknown users and malformed exchanges
//! (the server keeps serving), nothing but ApiVersions and SASL before authentication, and
//! an unencrypted listener on a non-loopback address refused at start.

use crate::common;

use std::path::Path;

use bytes::Bytes;
use common::security::{run_sasl_client, serve_refuses, users_set};
use common::server_proc::{free_port, ServerProc};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::kafka::blocking_client::BlockingClient;

/// A server with a PLAINTEXT and a SASL_PLAINTEXT Kafka listener; (server, plain, sasl).
fn server(data: &Path) -> (ServerProc, String, String) {
    server_with(data, &[])
}

fn server_with(data: &Path, extra: &[(&str, &str)]) -> (ServerProc, String, String) {
    let mut config = vec![
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:auto,SASL_PLAINTEXT://127.0.0.1:auto",
        ),
        (
            "sasl.enabled.mechanisms",
            "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        ),
    ];
    config.extend_from_slice(extra);
    let server = ServerProc::start(data, 2, &config);
    let (plain, sasl) = (
        server.listener("PLAINTEXT"),
        server.listener("SASL_PLAINTEXT"),
    );
    (server, plain, sasl)
}

fn run_client(server: &ServerProc, args: &[&str], expect: &str) {
    run_sasl_client(server, &[], args, expect);
}

#[test]
fn scram_and_plain_logins_through_real_clients() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "alice", "SCRAM-SHA-256", "alice-secret");
    users_set(&data, "alice", "SCRAM-SHA-512", "alice-secret");
    users_set(&data, "bob", "SCRAM-SHA-512", "bob pass, with = signs");
    let (mut server, _plain, sasl) = server(&data);
    let ok = |args: &[&str]| run_client(&server, args, "OK");
    ok(&[
        "confluent",
        &sasl,
        "SCRAM-SHA-256",
        "alice",
        "alice-secret",
        "t",
    ]);
    ok(&[
        "confluent",
        &sasl,
        "SCRAM-SHA-512",
        "bob",
        "bob pass, with = signs",
        "t",
    ]);
    ok(&["confluent", &sasl, "PLAIN", "alice", "alice-secret", "t"]);
    ok(&[
        "kafka-python",
        &sasl,
        "SCRAM-SHA-512",
        "bob",
        "bob pass, with = signs",
        "t",
    ]);
    ok(&["kafka-python", &sasl, "PLAIN", "alice", "alice-secret", "t"]);
    let refused = |args: &[&str]| run_client(&server, args, "REFUSED");
    refused(&["refused", &sasl, "SCRAM-SHA-256", "alice", "wrong", "t"]);
    refused(&[
        "refused",
        &sasl,
        "SCRAM-SHA-256",
        "mallory",
        "alice-secret",
        "t",
    ]);
    refused(&[
        "refused",
        &sasl,
        "SCRAM-SHA-256",
        "bob",
        "bob pass, with = signs",
        "t",
    ]);
    refused(&["refused", &sasl, "PLAIN", "alice", "wrong", "t"]);
    // The credentials are the data directory's: still there after a kill -9.
    server.restart_after_kill();
    run_client(
        &server,
        &[
            "confluent",
            &sasl,
            "SCRAM-SHA-256",
            "alice",
            "alice-secret",
            "t",
        ],
        "OK",
    );
}

/// Users managed live through AdminClient (KIP-554): a user set with
/// alter_user_scram_credentials logs in at once, on every shard, and after a kill -9; once
/// deleted it is refused.
#[test]
fn users_are_managed_live_with_alter_user_scram_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (mut server, plain, sasl) = server(&data);
    let set = [
        "admin-set",
        &plain,
        "SCRAM-SHA-512",
        "carol",
        "carol-pw",
        "-",
    ];
    run_client(&server, &set, "OK");
    // Several logins: the connections land on both shards.
    for _ in 0..3 {
        let login = [
            "confluent",
            &sasl,
            "SCRAM-SHA-512",
            "carol",
            "carol-pw",
            "t",
        ];
        run_client(&server, &login, "OK");
    }
    server.restart_after_kill();
    let login = [
        "confluent",
        &sasl,
        "SCRAM-SHA-512",
        "carol",
        "carol-pw",
        "t",
    ];
    run_client(&server, &login, "OK");
    let delete = ["admin-delete", &plain, "SCRAM-SHA-512", "carol", "-", "-"];
    run_client(&server, &delete, "OK");
    let refused = ["refused", &sasl, "SCRAM-SHA-512", "carol", "carol-pw", "t"];
    run_client(&server, &refused, "REFUSED");
}

fn call(
    c: &mut BlockingClient,
    version: i16,
    r: RequestKind,
) -> Result<ResponseKind, shardlog::kafka::KafkaWireError> {
    let key = match &r {
        RequestKind::ApiVersions(_) => ApiKey::ApiVersions,
        RequestKind::SaslHandshake(_) => ApiKey::SaslHandshake,
        RequestKind::SaslAuthenticate(_) => ApiKey::SaslAuthenticate,
        RequestKind::Metadata(_) => ApiKey::Metadata,
        other => panic!("{other:?}"),
    };
    c.call(key, version, &r)
}

fn handshake(c: &mut BlockingClient, mechanism: &'static str) -> SaslHandshakeResponse {
    let r = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    match call(c, 1, RequestKind::SaslHandshake(r)) {
        Ok(ResponseKind::SaslHandshake(h)) => h,
        other => panic!("SaslHandshake: {other:?}"),
    }
}

fn authenticate(c: &mut BlockingClient, token: Vec<u8>) -> SaslAuthenticateResponse {
    let r = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    match call(c, 2, RequestKind::SaslAuthenticate(r)) {
        Ok(ResponseKind::SaslAuthenticate(a)) => a,
        other => panic!("SaslAuthenticate: {other:?}"),
    }
}

fn metadata() -> RequestKind {
    RequestKind::Metadata(MetadataRequest::default().with_topics(None))
}

/// Whether the server closed the connection (the next read sees the end).
fn closed(c: &mut BlockingClient) -> bool {
    c.read_frame().is_none()
}

#[test]
fn unauthenticated_connections_get_nothing_but_sasl() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "alice", "SCRAM-SHA-256", "alice-secret");
    let (server, plain, sasl) = server(&data);
    let connect = |addr: &str| BlockingClient::connect(addr).unwrap();
    // ApiVersions is answered and offers the SASL requests.
    let mut c = connect(&sasl);
    let Ok(ResponseKind::ApiVersions(v)) = call(
        &mut c,
        3,
        RequestKind::ApiVersions(ApiVersionsRequest::default()),
    ) else {
        panic!()
    };
    let offers = |key: ApiKey| v.api_keys.iter().any(|k| k.api_key == key as i16);
    assert!(offers(ApiKey::SaslHandshake) && offers(ApiKey::SaslAuthenticate));
    // Any other request before authentication closes the connection unanswered.
    assert!(call(&mut c, 9, metadata()).is_err(), "Metadata before SASL");
    // An unknown mechanism: 33 with the enabled list, then closed.
    let mut c = connect(&sasl);
    let h = handshake(&mut c, "GSSAPI");
    assert_eq!(h.error_code, 33);
    assert_eq!(h.mechanisms.len(), 3, "{h:?}");
    assert!(closed(&mut c));
    // A malformed, an oversized and a truncated SCRAM exchange: 58, then closed.
    for token in [
        b"garbage".to_vec(),
        [b"n,,n=alice,r=".as_slice(), &vec![b'x'; 8192]].concat(),
        b"n,,n=alice".to_vec(),
    ] {
        let mut c = connect(&sasl);
        assert_eq!(handshake(&mut c, "SCRAM-SHA-256").error_code, 0);
        let a = authenticate(&mut c, token);
        assert_eq!(a.error_code, 58, "{a:?}");
        assert!(closed(&mut c));
    }
    // A proof that does not verify: 58 with a message that does not say why.
    let mut c = connect(&sasl);
    assert_eq!(handshake(&mut c, "SCRAM-SHA-256").error_code, 0);
    let first = authenticate(&mut c, b"n,,n=alice,r=clientnonce".to_vec());
    assert_eq!(first.error_code, 0);
    let nonce = String::from_utf8(first.auth_bytes.to_vec()).unwrap();
    let nonce = nonce.split(',').next().unwrap().to_string();
    let last = authenticate(&mut c, format!("c=biws,{nonce},p=AAAA").into_bytes());
    assert_eq!(last.error_code, 58);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Authentication failed: invalid credentials")
    );
    // On the PLAINTEXT listener the SASL requests are out of turn (ILLEGAL_SASL_STATE), and
    // everything else is served: the server kept serving through all of the above.
    let mut c = connect(&plain);
    assert_eq!(handshake(&mut c, "SCRAM-SHA-256").error_code, 34);
    assert!(matches!(
        call(&mut c, 9, metadata()),
        Ok(ResponseKind::Metadata(_))
    ));
    run_client(
        &server,
        &[
            "confluent",
            &sasl,
            "SCRAM-SHA-256",
            "alice",
            "alice-secret",
            "t",
        ],
        "OK",
    );
}

#[test]
fn an_unencrypted_listener_off_loopback_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let stderr = serve_refuses(
        tmp.path(),
        &format!("listeners=SASL_PLAINTEXT://0.0.0.0:{port}\n"),
    );
    assert!(
        stderr.contains(&format!("SASL_PLAINTEXT://0.0.0.0:{port}"))
            && stderr.contains("allow.insecure.listeners"),
        "{stderr}"
    );
    // Issue 39: the metrics endpoint too (it has no authentication of its own).
    let port = free_port();
    let stderr = serve_refuses(tmp.path(), &format!("metrics.listen=0.0.0.0:{port}\n"));
    assert!(
        stderr.contains("metrics.listen") && stderr.contains("allow.insecure.listeners"),
        "{stderr}"
    );
}

#[test]
fn sessions_expire_and_clients_reauthenticate_on_the_live_connection() {
    use shardlog::security::{scram::Mechanism, SaslMechanism};
    use std::time::Duration;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "alice", "SCRAM-SHA-256", "alice-secret");
    users_set(&data, "bob", "SCRAM-SHA-256", "bob-secret");
    let (server, _plain, sasl) = server_with(&data, &[("connections.max.reauth.ms", "1500")]);
    let scram = SaslMechanism::Scram(Mechanism::Sha256);
    let connect = || BlockingClient::connect(&sasl).unwrap();
    // v1+ clients are told the session's lifetime.
    let mut c = connect();
    assert_eq!(handshake(&mut c, "PLAIN").error_code, 0);
    let a = authenticate(&mut c, b"\0alice\0alice-secret".to_vec());
    assert_eq!((a.error_code, a.session_lifetime_ms), (0, 1500), "{a:?}");
    // A client that re-authenticates before the end keeps its connection.
    let mut c = connect();
    c.authenticate(scram, "alice", "alice-secret").unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    c.authenticate(scram, "alice", "alice-secret").unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        call(&mut c, 9, metadata()).is_ok(),
        "re-authenticated 1 s ago"
    );
    // One that does not is closed at its next request after the end.
    let mut d = connect();
    d.authenticate(scram, "alice", "alice-secret").unwrap();
    assert!(call(&mut d, 9, metadata()).is_ok());
    std::thread::sleep(Duration::from_millis(1700));
    assert!(
        call(&mut d, 9, metadata()).is_err(),
        "served after the session ended"
    );
    // Re-authenticating as someone else closes the connection.
    let mut e = connect();
    e.authenticate(scram, "alice", "alice-secret").unwrap();
    assert!(e.authenticate(scram, "bob", "bob-secret").is_err());
    assert!(closed(&mut e));
    // librdkafka re-authenticates by itself across four lifetimes.
    run_client(
        &server,
        &[
            "confluent",
            &sasl,
            "SCRAM-SHA-256",
            "alice",
            "alice-secret",
            "long-lived",
        ],
        "OK",
    );
    run_client(
        &server,
        &[
            "long",
            &sasl,
            "SCRAM-SHA-256",
            "alice",
            "alice-secret",
            "long-lived",
        ],
        "OK",
    );
    let expired = server.log_text().matches("SASL session expired").count();
    assert_eq!(
        expired, 1,
        "only the client that did not re-authenticate was cut"
    );
}

/// Issue 39: peers that have not authenticated hold nothing other clients wait for. Frames
/// before authentication are capped at Kafka's 512 KiB (a larger one closes the connection
/// at once) and take nothing from the shard's in-flight budget, so connections announcing
/// frames they never send do not stall a produce on the same shard; and each step of a
/// handshake has the request timeout, not only the first (an abandoned exchange used to
/// keep its slot for `connections.max.idle.ms`).
#[test]
fn unauthenticated_peers_hold_no_budget_and_abandoned_handshakes_end() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = ServerProc::start(
        &data,
        1,
        &[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:auto,SASL_PLAINTEXT://127.0.0.1:auto",
            ),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("max.inflight.bytes.per.shard", "2097152"),
            ("max.inflight.bytes.per.connection", "2097152"),
            ("max.frame.bytes", "2097152"),
            ("request.timeout.ms", "8000"),
            ("connections.max.idle.ms", "600000"),
        ],
    );
    let sasl = server.listener("SASL_PLAINTEXT");
    // Over the handshake cap: closed without reading on.
    let mut big = std::net::TcpStream::connect(&sasl).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    big.write_all(&(1i32 << 20).to_be_bytes()).unwrap();
    let mut c = BlockingClient::over(Box::new(big), Duration::from_secs(5));
    let asked = Instant::now();
    assert!(closed(&mut c), "a 1 MiB frame before authentication");
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "closed at once, not when the frame timed out"
    );
    // Under the cap, announced and never sent: 8 x 400 KiB, more than the shard's 2 MiB.
    let silent: Vec<std::net::TcpStream> = (0..8)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(&sasl).unwrap();
            s.write_all(&(400i32 << 10).to_be_bytes()).unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let addr = server.addr();
    let started = Instant::now();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        c.create_topic("budget", 1, vec![]).await.unwrap();
        let records = common::single(1_700_000_000_000, 1 << 20);
        c.produce("budget", 0, 1, records.into()).await.unwrap();
    });
    // The silent peers' frames would expire at 8 s: the produce does not wait for that.
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "a 1 MiB produce waited {:?} behind unauthenticated peers",
        started.elapsed()
    );
    drop(silent);
    // A handshake abandoned after its first step is closed within the request timeout.
    let mut c = BlockingClient::connect_with_timeout(&sasl, Duration::from_secs(20)).unwrap();
    assert_eq!(handshake(&mut c, "PLAIN").error_code, 0);
    let waited = Instant::now();
    assert!(closed(&mut c));
    assert!(
        waited.elapsed() < Duration::from_secs(15),
        "an abandoned handshake held its connection for {:?}",
        waited.elapsed()
    );
}
