//! Client certificates (`ssl.client.auth`) on an SSL listener of the real `shardlog serve`
//! binary, set for that listener alone (`listener.name.ssl.`): the certificate's DN, through
//! `ssl.principal.mapping.rules`, is the principal the ACLs see; confluent-kafka and
//! kafka-python (and kcat) with a certificate the truststore's CA signed produce, consume and commit;
//! no certificate, or one from another CA, is refused while the server keeps serving;
//! `requested` lets a client without one in as User:ANONYMOUS.

use crate::common;

use std::path::Path;

use common::certs::TestCa;
use common::security::{acls_tool, run_sasl_client};
use common::server_proc::{free_port, ServerProc};

struct Files {
    keystore: String,
    truststore: String,
    /// (certificate, key) of O=acme, CN=alice, signed by the trusted CA.
    alice: (String, String),
    /// The same subject, signed by another CA.
    forged: (String, String),
}

fn write(dir: &Path, name: &str, text: String) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn mint(dir: &Path) -> Files {
    let (ca, other) = (TestCa::new("shardlog test CA"), TestCa::new("mallory's CA"));
    let (cert, key) = ca.client("acme", "alice");
    let (fcert, fkey) = other.client("acme", "alice");
    Files {
        keystore: write(dir, "keystore.pem", ca.server_keystore()),
        truststore: write(dir, "ca.pem", ca.pem()),
        alice: (write(dir, "alice.pem", cert), write(dir, "alice.key", key)),
        forged: (
            write(dir, "forged.pem", fcert),
            write(dir, "forged.key", fkey),
        ),
    }
}

/// A PLAINTEXT and an SSL listener; the SSL one asks for certificates (`client_auth`);
/// "CN=alice,O=acme" maps to "alice", a super user. (server, plain, ssl)
fn server(data: &Path, f: &Files, client_auth: &str) -> (ServerProc, String, String) {
    let config = [
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:auto,SSL://127.0.0.1:auto",
        ),
        ("ssl.keystore.location", f.keystore.as_str()),
        ("ssl.truststore.location", f.truststore.as_str()),
        ("listener.name.ssl.ssl.client.auth", client_auth),
        (
            "ssl.principal.mapping.rules",
            "RULE:^CN=([^,]*),O=acme$/$1/L,DEFAULT",
        ),
        ("authorizer.enable", "true"),
        ("super.users", "User:alice"),
    ];
    let server = ServerProc::start(data, 2, &config);
    let (plain, ssl) = (server.listener("PLAINTEXT"), server.listener("SSL"));
    (server, plain, ssl)
}

fn client(
    server: &ServerProc,
    f: &Files,
    cert: Option<&(String, String)>,
    args: &[&str],
    expect: &str,
) {
    let mut env = vec![("SSL_CA", f.truststore.clone())];
    if let Some((c, k)) = cert {
        env.extend([("SSL_CERT", c.clone()), ("SSL_KEY", k.clone())]);
    }
    run_sasl_client(server, &env, args, expect);
}

#[test]
fn client_certificates_are_principals_on_an_ssl_listener() {
    let tmp = tempfile::tempdir().unwrap();
    let f = mint(tmp.path());
    let (server, _plain, ssl) = server(&tmp.path().join("data"), &f, "required");
    let alice = Some(&f.alice);
    client(
        &server,
        &f,
        alice,
        &["confluent", &ssl, "-", "alice", "-", "certs"],
        "OK",
    );
    client(
        &server,
        &f,
        alice,
        &["kafka-python", &ssl, "-", "alice", "-", "certs"],
        "OK",
    );
    // kcat with the same certificate lists the topic (it is alice, a super user).
    let props = [
        "security.protocol=SSL".to_string(),
        format!("ssl.ca.location={}", f.truststore),
        format!("ssl.certificate.location={}", f.alice.0),
        format!("ssl.key.location={}", f.alice.1),
    ];
    let listed = common::security::kcat(&ssl, &props, &["-L", "-t", "certs"], "");
    assert!(
        listed.contains("topic \"certs\" with 2 partitions"),
        "{listed}"
    );
    client(
        &server,
        &f,
        None,
        &["probe", &ssl, "-", "nobody", "-", "-"],
        "REFUSED",
    );
    client(
        &server,
        &f,
        Some(&f.forged),
        &["probe", &ssl, "-", "alice", "-", "-"],
        "REFUSED",
    );
    // Still serving the one with the right certificate.
    client(
        &server,
        &f,
        alice,
        &["probe", &ssl, "-", "alice", "-", "-"],
        "OK",
    );
    let log = server.log_text();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn requested_certificates_let_anonymous_clients_in_under_the_acls() {
    let tmp = tempfile::tempdir().unwrap();
    let f = mint(tmp.path());
    let data = tmp.path().join("data");
    acls_tool(&[
        "--data-dir",
        data.to_str().unwrap(),
        "--add",
        "--allow-principal",
        "User:ANONYMOUS",
        "--operation",
        "Describe",
        "--topic",
        "*",
    ]);
    let (server, _plain, ssl) = server(&data, &f, "requested");
    client(
        &server,
        &f,
        Some(&f.alice),
        &["confluent", &ssl, "-", "alice", "-", "open"],
        "OK",
    );
    // Without a certificate: connected, anonymous, may list topics but not write them.
    client(
        &server,
        &f,
        None,
        &["probe", &ssl, "-", "nobody", "-", "-"],
        "OK",
    );
    let env = [("SSL_CA", f.truststore.clone())];
    common::security::run_client_script(
        &server,
        "acls.py",
        &env,
        &["visible-not-writable", &ssl, "-", "anonymous", "-", "open"],
        "DENIED",
    );
}

#[test]
fn required_client_certificates_need_a_truststore() {
    let tmp = tempfile::tempdir().unwrap();
    let f = mint(tmp.path());
    let config = format!(
        "listeners=SSL://127.0.0.1:{}\nssl.keystore.location={}\nssl.client.auth=required\n",
        free_port(),
        f.keystore
    );
    let stderr = common::security::serve_refuses(tmp.path(), &config);
    assert!(stderr.contains("ssl.truststore.location"), "{stderr}");
    let bad = format!(
        "listeners=SSL://127.0.0.1:{}\nlistener.name.ssl.ssl.cipher.suites=x\n",
        free_port()
    );
    let stderr = common::security::serve_refuses(tmp.path(), &bad);
    assert!(stderr.contains("cannot be set per listener"), "{stderr}");
}
