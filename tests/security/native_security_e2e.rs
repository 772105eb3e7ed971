//! The native protocol under SASL and TLS (`native.security.protocol`) on the real
//! `shardlog serve` binary: shardlog's own tools connect with Kafka's `--command-config`
//! (SASL_SSL with SCRAM, trusting the test CA) and kcat-style `-X`, create, produce and
//! consume; without credentials, with a wrong password, or in plaintext on the TLS port
//! they are refused with a clear error while the server keeps serving; on a SASL_PLAINTEXT
//! native listener nothing but ApiVersions and SASL is answered before authentication.

use crate::common;

use std::path::Path;

use common::certs::TestCa;
use common::security::users_set;
use common::server_proc::ServerProc;

/// `shardlog ARGS` with `stdin`: (success, stdout and stderr).
fn shardlog(args: &[&str], stdin: &str) -> (bool, String) {
    let (out, err, ok) = common::cli::shardlog(args, Some(stdin));
    (ok, format!("{out}{err}"))
}

fn properties(dir: &Path, name: &str, lines: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, lines).unwrap();
    path.display().to_string()
}

#[test]
fn native_tools_work_over_sasl_ssl_with_command_config() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = TestCa::new("native test CA");
    let keystore = properties(tmp.path(), "keystore.pem", &ca.server_keystore());
    let ca_file = properties(tmp.path(), "ca.pem", &ca.pem());
    let data = tmp.path().join("data");
    users_set(&data, "admin", "SCRAM-SHA-512", "admin-secret");
    let config = [
        ("native.security.protocol", "SASL_SSL"),
        ("ssl.keystore.location", keystore.as_str()),
        ("kafka.listen", "off"),
    ];
    let server = ServerProc::start(&data, 2, &config);
    let addr = server.addr();
    let admin = properties(
        tmp.path(),
        "admin.properties",
        &format!(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=admin\n\
             sasl.password=admin-secret\nssl.ca.location={ca_file}\n"
        ),
    );
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-b", &addr, "--command-config", &admin]);
        all.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>, stdin: &str| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        shardlog(&refs, stdin)
    };
    let (ok, text) = run(
        with(&["topics", "create", "--topic", "secure", "--partitions", "2"]),
        "",
    );
    assert!(ok, "create over SASL_SSL: {text}");
    let (ok, text) = run(
        with(&["produce", "--topic", "secure", "--partition", "0"]),
        "one\ntwo\n",
    );
    assert!(ok, "produce over SASL_SSL: {text}");
    let consume = with(&[
        "consume",
        "--topic",
        "secure",
        "--partition",
        "0",
        "--offset",
        "0",
        "--max-records",
        "2",
    ]);
    let (ok, text) = run(consume, "");
    assert!(
        ok && text.contains("one") && text.contains("two"),
        "consume: {text}"
    );
    // kcat-style -X instead of a file.
    let x = |k: &str, v: &str| format!("{k}={v}");
    let (ok, text) = shardlog(
        &[
            "topics",
            "list",
            "-b",
            &addr,
            "-X",
            &x("security.protocol", "sasl_ssl"),
            "-X",
            &x("sasl.mechanism", "SCRAM-SHA-512"),
            "-X",
            &x("sasl.username", "admin"),
            "-X",
            &x("sasl.password", "admin-secret"),
            "-X",
            &x("ssl.ca.location", &ca_file),
        ],
        "",
    );
    assert!(ok && text.contains("secure"), "list with -X: {text}");
    // A wrong password, and a plaintext client on the TLS port, are refused clearly.
    let wrong = properties(
        tmp.path(),
        "wrong.properties",
        &std::fs::read_to_string(&admin)
            .unwrap()
            .replace("admin-secret", "nope"),
    );
    let (ok, text) = shardlog(
        &["topics", "list", "-b", &addr, "--command-config", &wrong],
        "",
    );
    assert!(
        !ok && text.contains("SaslAuthenticationFailed"),
        "wrong password: {text}"
    );
    let (ok, text) = shardlog(&["topics", "list", "-b", &addr, "--timeout-ms", "5000"], "");
    assert!(!ok, "plaintext on the TLS port: {text}");
    assert!(
        text.contains("TLS listener") && text.contains("--command-config"),
        "says what it needs: {text}"
    );
    // Still serving; consumer-groups too (its native requests over SASL_SSL).
    let (ok, text) = run(with(&["topics", "list"]), "");
    assert!(ok && text.contains("secure"), "{text}");
    let groups = [
        "consumer-groups",
        "--bootstrap-server",
        &addr,
        "--command-config",
        &admin,
        "--list",
    ];
    let (ok, text) = shardlog(&groups, "");
    assert!(ok, "consumer-groups over SASL_SSL: {text}");
}

#[test]
fn a_sasl_plaintext_native_listener_answers_nothing_before_authentication() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "alice", "SCRAM-SHA-256", "alice-secret");
    let config = [
        ("native.security.protocol", "SASL_PLAINTEXT"),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256,PLAIN"),
        ("kafka.listen", "off"),
    ];
    let server = ServerProc::start(&data, 2, &config);
    let addr = server.addr();
    let (ok, text) = shardlog(&["topics", "list", "-b", &addr], "");
    assert!(
        !ok && text.contains("IllegalSaslState"),
        "unauthenticated: {text}"
    );
    for mechanism in ["SCRAM-SHA-256", "PLAIN"] {
        let (ok, text) = shardlog(
            &[
                "topics",
                "list",
                "-b",
                &addr,
                "-X",
                "security.protocol=SASL_PLAINTEXT",
                "-X",
                &format!("sasl.mechanism={mechanism}"),
                "-X",
                "sasl.username=alice",
                "-X",
                "sasl.password=alice-secret",
            ],
            "",
        );
        assert!(ok, "{mechanism}: {text}");
    }
    let (ok, text) = shardlog(
        &[
            "topics",
            "list",
            "-b",
            &addr,
            "-X",
            "security.protocol=SASL_PLAINTEXT",
            "-X",
            "sasl.mechanism=SCRAM-SHA-512",
            "-X",
            "sasl.username=alice",
            "-X",
            "sasl.password=x",
        ],
        "",
    );
    assert!(!ok && text.contains("UnsupportedSaslMechanism"), "{text}");
}

/// Issue 39: the native tools pointed at a secured Kafka listener (SASL_SSL) do TLS and SASL
/// as the client config says, find the server's native listener through it and work, as
/// they do on PLAINTEXT; without credentials they say the port needs TLS/SASL and
/// `--command-config` instead of "answers neither protocol".
#[test]
fn native_tools_reach_the_server_through_a_secured_kafka_listener() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = TestCa::new("kafka listener test CA");
    let keystore = properties(tmp.path(), "keystore.pem", &ca.server_keystore());
    let ca_file = properties(tmp.path(), "ca.pem", &ca.pem());
    let data = tmp.path().join("data");
    users_set(&data, "admin", "SCRAM-SHA-512", "admin-secret");
    let config = [
        ("listeners", "SASL_SSL://127.0.0.1:auto"),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
        ("ssl.keystore.location", keystore.as_str()),
    ];
    let server = ServerProc::start(&data, 2, &config);
    let kafka = server.listener("SASL_SSL");
    let admin = properties(
        tmp.path(),
        "admin.properties",
        &format!(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=admin\n\
             sasl.password=admin-secret\nssl.ca.location={ca_file}\n"
        ),
    );
    let (ok, text) = shardlog(
        &[
            "topics",
            "create",
            "--topic",
            "via-kafka",
            "-b",
            &kafka,
            "--command-config",
            &admin,
        ],
        "",
    );
    assert!(ok, "create through the SASL_SSL Kafka listener: {text}");
    assert!(
        text.contains(&server.addr()),
        "names the native listener it used: {text}"
    );
    let (ok, text) = shardlog(
        &["topics", "list", "-b", &kafka, "--command-config", &admin],
        "",
    );
    assert!(ok && text.contains("via-kafka"), "{text}");
    let (ok, text) = shardlog(
        &["topics", "list", "-b", &kafka, "--timeout-ms", "5000"],
        "",
    );
    assert!(
        !ok && text.contains("TLS listener") && text.contains("--command-config"),
        "without credentials: {text}"
    );
}
