//! TLS listeners (SSL, SASL_SSL) of the real `shardlog serve` binary with certificates minted
//! in the test (a CA and a server certificate for 127.0.0.1 and localhost, in a PEM
//! keystore as KIP-651 reads them): confluent-kafka and kafka-python produce, consume and
//! commit over SSL and over SASL_SSL with SCRAM; a plaintext client on a TLS port, a TLS
//! client that does not trust the CA, and a wrong password are refused cleanly while the
//! server keeps serving.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::kafka_clients::{run_bounded, script};
use common::server_proc::{free_port, ServerProc};
use kafka_protocol::messages::*;
use shardlog::kafka::blocking_client::BlockingClient;

/// Writes `keystore.pem` (server certificate, then the CA's, then the key) and `ca.pem`;
/// (keystore, ca). A second, unrelated CA goes to `other-ca.pem`.
fn mint_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca = |name: &str| {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        (params.self_signed(&key).unwrap(), key)
    };
    let (ca_cert, ca_key) = ca("shardlog test CA");
    let (other_ca, _) = ca("someone else's CA");
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "shardlog test server");
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
    let keystore = dir.join("keystore.pem");
    let pem = format!("{}{}{}", cert.pem(), ca_cert.pem(), key.serialize_pem());
    std::fs::write(&keystore, pem).unwrap();
    let (ca_path, other_path) = (dir.join("ca.pem"), dir.join("other-ca.pem"));
    std::fs::write(&ca_path, ca_cert.pem()).unwrap();
    std::fs::write(&other_path, other_ca.pem()).unwrap();
    (keystore, ca_path, other_path)
}

fn users_set(data: &Path, user: &str, mechanism: &str, password: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["users", "set", "--data-dir"])
        .arg(data)
        .args(["--user", user, "--mechanism", mechanism, "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    assert!(child.wait().unwrap().success());
}

fn run_client(server: &ServerProc, ca: &Path, args: &[&str], expect: &str) {
    let mut cmd = script("sasl.py", args);
    cmd.env("SSL_CA", ca);
    let out = run_bounded(&mut cmd, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l == expect),
        "sasl.py {args:?}: {}\n{stdout}\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
}

#[test]
fn ssl_and_sasl_ssl_with_real_clients() {
    let tmp = tempfile::tempdir().unwrap();
    let (keystore, ca, other_ca) = mint_certificates(tmp.path());
    let data = tmp.path().join("data");
    users_set(&data, "alice", "SCRAM-SHA-256", "alice-secret");
    users_set(&data, "alice", "SCRAM-SHA-512", "alice-secret");
    let ports: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();
    let (ssl, sasl_ssl, plain) = (&ports[0], &ports[1], &ports[2]);
    let listeners = format!("SSL://{ssl},SASL_SSL://{sasl_ssl},PLAINTEXT://{plain}");
    let keystore = keystore.display().to_string();
    let config = [
        ("listeners", listeners.as_str()),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", keystore.as_str()),
    ];
    let server = ServerProc::start(&data, 2, &config);
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
    let conf = tmp.path().join("server.properties");
    let port = free_port();
    std::fs::write(&conf, format!("listeners=SASL_SSL://127.0.0.1:{port}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["serve", "--data-dir"])
        .arg(tmp.path().join("data"))
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--config")
        .arg(&conf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("ssl.keystore.location"), "{stderr}");
}
