//! TLS listeners (SSL, SASL_SSL) of the real `shardlog serve` binary with certificates minted
//! in the test (a CA and a server certificate for 127.0.0.1 and localhost, in a PEM
//! keystore as KIP-651 reads them): confluent-kafka and kafka-python produce, consume and
//! commit over SSL and over SASL_SSL with SCRAM (kcat too); a plaintext client on a TLS port, a TLS
//! client that does not trust the CA, and a wrong password are refused cleanly while the
//! server keeps serving.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::kafka_clients::{run_bounded, script};
use common::security::{run_sasl_client, serve_refuses, users_set};
use common::server_proc::{free_port, ServerProc};
use kafka_protocol::messages::*;
use shardlog::kafka::blocking_client::BlockingClient;

/// A CA and a server certificate it signs: (keystore PEM, CA certificate PEM).
fn mint(ca_name: &str) -> (String, String) {
    let ca = common::certs::TestCa::new(ca_name);
    (ca.server_keystore(), ca.pem())
}

/// Writes `keystore.pem` and `ca.pem` of one CA, and `other-ca.pem` and `other-keystore.pem`
/// of an unrelated one; (keystore, ca, other ca, other keystore).
fn mint_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let paths = [
        "keystore.pem",
        "ca.pem",
        "other-ca.pem",
        "other-keystore.pem",
    ]
    .map(|f| dir.join(f));
    let (keystore, ca) = mint("shardlog test CA");
    let (other_keystore, other_ca) = mint("someone else's CA");
    for (path, text) in paths.iter().zip([keystore, ca, other_ca, other_keystore]) {
        std::fs::write(path, text).unwrap();
    }
    let [a, b, c, d] = paths;
    (a, b, c, d)
}

fn run_client(server: &ServerProc, ca: &Path, args: &[&str], expect: &str) {
    run_client_padded(server, ca, args, expect, 0);
}

/// With `pad` more bytes in every record (requests and replies of many TLS records).
fn run_client_padded(server: &ServerProc, ca: &Path, args: &[&str], expect: &str, pad: usize) {
    let env = [
        ("SSL_CA", ca.display().to_string()),
        ("PAD", pad.to_string()),
    ];
    run_sasl_client(server, &env, args, expect);
}

#[test]
fn ssl_and_sasl_ssl_with_real_clients() {
    let tmp = tempfile::tempdir().unwrap();
    let (keystore, ca, other_ca, _) = mint_certificates(tmp.path());
    let data = tmp.path().join("data");
    users_set(&data, "alice", "SCRAM-SHA-256", "alice-secret");
    users_set(&data, "alice", "SCRAM-SHA-512", "alice-secret");
    let keystore = keystore.display().to_string();
    let config = [
        (
            "listeners",
            "SSL://127.0.0.1:auto,SASL_SSL://127.0.0.1:auto,PLAINTEXT://127.0.0.1:auto",
        ),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", keystore.as_str()),
    ];
    let server = ServerProc::start(&data, 2, &config);
    let (ssl, sasl_ssl, plain) = (
        &server.listener("SSL"),
        &server.listener("SASL_SSL"),
        &server.listener("PLAINTEXT"),
    );
    let ok = |args: &[&str]| run_client(&server, &ca, args, "OK");
    ok(&["confluent", ssl, "-", "anon", "-", "t"]);
    ok(&[
        "confluent",
        sasl_ssl,
        "SCRAM-SHA-256",
        "alice",
        "alice-secret",
        "t",
    ]);
    ok(&[
        "confluent",
        sasl_ssl,
        "SCRAM-SHA-512",
        "alice",
        "alice-secret",
        "t",
    ]);
    ok(&[
        "kafka-python",
        sasl_ssl,
        "SCRAM-SHA-256",
        "alice",
        "alice-secret",
        "t",
    ]);
    ok(&["kafka-python", ssl, "-", "anon", "-", "t"]);
    // kcat (librdkafka as Debian ships it) over SASL_SSL with SCRAM-SHA-512.
    let props = [
        "security.protocol=SASL_SSL".to_string(),
        "sasl.mechanisms=SCRAM-SHA-512".to_string(),
        "sasl.username=alice".to_string(),
        "sasl.password=alice-secret".to_string(),
        format!("ssl.ca.location={}", ca.display()),
    ];
    common::security::kcat(sasl_ssl, &props, &["-P", "-t", "kc", "-p", "0"], "k1\nk2\n");
    let read = common::security::kcat(
        sasl_ssl,
        &props,
        &["-C", "-t", "kc", "-p", "0", "-o", "beginning", "-e"],
        "",
    );
    assert_eq!(read.lines().collect::<Vec<_>>(), ["k1", "k2"], "{read}");
    // 200 KB records: each request and reply spans many TLS records (more than the 16 KiB
    // of decrypted data a session holds at once).
    let big = [
        "confluent",
        sasl_ssl,
        "SCRAM-SHA-512",
        "alice",
        "alice-secret",
        "big",
    ];
    run_client_padded(&server, &ca, &big, "OK", 200_000);
    let refused = |ca: &Path, args: &[&str]| run_client(&server, ca, args, "REFUSED");
    refused(
        &ca,
        &["refused", sasl_ssl, "SCRAM-SHA-256", "alice", "wrong", "t"],
    );
    // A client that does not trust the server's CA gives up at the handshake.
    refused(&other_ca, &["refused", ssl, "-", "anon", "-", "t"]);
    // A plaintext Kafka client on a TLS port: the handshake fails and the server closes.
    let mut c = BlockingClient::connect_with_timeout(ssl, Duration::from_secs(10)).unwrap();
    let request = RequestKind::ApiVersions(ApiVersionsRequest::default());
    assert!(c.call(ApiKey::ApiVersions, 3, &request).is_err());
    // Through all of it the server kept serving.
    let mut c = BlockingClient::connect(plain).unwrap();
    assert!(matches!(
        c.call(ApiKey::ApiVersions, 3, &request),
        Ok(ResponseKind::ApiVersions(_))
    ));
    ok(&[
        "confluent",
        sasl_ssl,
        "SCRAM-SHA-256",
        "alice",
        "alice-secret",
        "t",
    ]);
}

#[test]
fn a_tls_listener_without_a_keystore_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let config = format!("listeners=SASL_SSL://127.0.0.1:{}\n", free_port());
    let stderr = serve_refuses(tmp.path(), &config);
    assert!(stderr.contains("ssl.keystore.location"), "{stderr}");
}

/// A rotated certificate is in force for new connections without a restart: the keystore
/// file is replaced (as a certificate manager does, by rename), and within a few seconds
/// clients that trust only the new CA connect while those that trust only the old one fail.
/// A server with one SSL listener on `keystore`: (server, the listener's address).
fn ssl_only(dir: &Path, keystore: &Path) -> (ServerProc, String) {
    let keystore_text = keystore.display().to_string();
    let config = [
        ("listeners", "SSL://127.0.0.1:auto"),
        ("ssl.keystore.location", keystore_text.as_str()),
    ];
    let server = ServerProc::start(&dir.join("data"), 2, &config);
    let ssl = server.listener("SSL");
    (server, ssl)
}

/// "OK" when a TLS client trusting `ca` lists topics at `ssl`, "REFUSED" when not.
fn probe(ssl: &str, ca: &Path) -> String {
    let mut cmd = script("sasl.py", &["probe", ssl, "-", "anon", "-", "-"]);
    cmd.env("SSL_CA", ca);
    let out = run_bounded(&mut cmd, Duration::from_secs(30));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_rotated_certificate_is_picked_up_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let (keystore, ca, other_ca, other_keystore) = mint_certificates(tmp.path());
    let (server, ssl) = ssl_only(tmp.path(), &keystore);
    let probe = |ca: &Path| probe(&ssl, ca);
    assert_eq!(probe(&ca), "OK");
    assert_eq!(probe(&other_ca), "REFUSED");
    let staged = tmp.path().join("keystore.pem.new");
    std::fs::copy(&other_keystore, &staged).unwrap();
    std::fs::rename(&staged, &keystore).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while probe(&other_ca) != "OK" {
        assert!(
            std::time::Instant::now() < deadline,
            "the new certificate was not picked up; server log:\n{}",
            server.log_text()
        );
    }
    assert_eq!(probe(&ca), "REFUSED", "the old certificate is gone");
}

#[test]
fn sighup_reloads_a_certificate_whose_file_time_did_not_change() {
    let tmp = tempfile::tempdir().unwrap();
    let (keystore, ca, other_ca, other_keystore) = mint_certificates(tmp.path());
    let (server, ssl) = ssl_only(tmp.path(), &keystore);
    let probe = |ca: &Path| probe(&ssl, ca);
    assert_eq!(probe(&ca), "OK");
    // The new certificate, with the old file's time: only the signal can tell.
    let before = std::fs::metadata(&keystore).unwrap().modified().unwrap();
    std::fs::write(&keystore, std::fs::read(&other_keystore).unwrap()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&keystore)
        .unwrap()
        .set_modified(before)
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(probe(&ca), "OK", "reloaded without a signal");
    // SAFETY: sending a signal to the server process this test started.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while probe(&other_ca) != "OK" {
        assert!(
            std::time::Instant::now() < deadline,
            "SIGHUP did not reload; server log:\n{}",
            server.log_text()
        );
    }
    assert!(server.log_text().contains("reloaded"));
}

#[test]
fn the_metrics_endpoint_can_be_https() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (keystore, ca, _, _) = mint_certificates(tmp.path());
    let keystore_text = keystore.display().to_string();
    let config = [
        ("metrics.listen", "auto"),
        ("metrics.security.protocol", "SSL"),
        ("ssl.keystore.location", keystore_text.as_str()),
    ];
    let server = ServerProc::start(&tmp.path().join("data"), 2, &config);
    let metrics = server.listen_addr("metrics.listen");
    let security = shardlog::security::client::ClientSecurity {
        protocol: shardlog::security::SecurityProtocol::Ssl,
        sasl: None,
        ca_location: Some(ca),
        certificate: None,
    };
    let timeout = Duration::from_secs(10);
    let mut https = shardlog::tools::secure_stream::connect(&metrics, &security, timeout).unwrap();
    https
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = https.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains("shardlog_"), "{answer}");
    // Plain HTTP on the HTTPS port gets no metrics.
    let mut plain = std::net::TcpStream::connect(&metrics).unwrap();
    plain.set_read_timeout(Some(timeout)).unwrap();
    plain
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut bytes = Vec::new();
    let _ = plain.read_to_end(&mut bytes);
    assert!(!String::from_utf8_lossy(&bytes).contains("shardlog_"));
    drop(server);
}
