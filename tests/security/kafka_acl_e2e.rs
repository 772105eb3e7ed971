//! Kafka's ACLs on the real `shardlog serve` binary with the authorizer on, through real
//! clients: a user without ACLs sees no topics and is refused with Kafka's authorization
//! errors; after `shardlog acls --add` (over SASL, with --command-config) the same user
//! produces, consumes and commits; super users bypass; ACLs and credentials survive
//! kill -9; `--remove` shuts the user out again; CreateAcls/DescribeAcls/DeleteAcls work
//! from confluent-kafka's AdminClient and are refused to non-admins and without an
//! authorizer; the native protocol applies the same ACLs.

use crate::common;

use std::path::Path;

use common::security::{acls_tool, run_client_script, run_sasl_client, users_set};
use common::server_proc::{free_port, ServerProc};

const SCRAM: &str = "SCRAM-SHA-256";

/// A server with the authorizer on and admin as the super user: (server, plain, sasl).
fn server(data: &Path, extra: &[(&str, &str)]) -> (ServerProc, String, String) {
    let mut config = vec![
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:auto,SASL_PLAINTEXT://127.0.0.1:auto",
        ),
        ("authorizer.enable", "true"),
        ("super.users", "User:admin;User:ops"),
    ];
    config.extend_from_slice(extra);
    let server = ServerProc::start(data, 2, &config);
    let (plain, sasl) = (
        server.listener("PLAINTEXT"),
        server.listener("SASL_PLAINTEXT"),
    );
    (server, plain, sasl)
}

/// The admin's client properties, as kafka-acls' --command-config takes them.
fn admin_properties(dir: &Path) -> String {
    let path = dir.join("admin.properties");
    let text = format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism={SCRAM}\nsasl.username=admin\nsasl.password=admin-secret\n"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn acls(script_args: &[&str], server: &ServerProc, expect: &str) {
    run_client_script(server, "acls.py", &[], script_args, expect);
}

#[test]
fn acls_decide_who_may_do_what_and_survive_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "admin", SCRAM, "admin-secret");
    users_set(&data, "alice", SCRAM, "alice-secret");
    let (mut server, plain, sasl) = server(&data, &[]);
    let admin = |s: &ServerProc| {
        run_sasl_client(
            s,
            &[],
            &["confluent", &sasl, SCRAM, "admin", "admin-secret", "orders"],
            "OK",
        )
    };
    admin(&server);
    let alice_denied = |s: &ServerProc| {
        acls(
            &["denied", &sasl, SCRAM, "alice", "alice-secret", "orders"],
            s,
            "DENIED",
        )
    };
    alice_denied(&server);
    acls(
        &["denied", &plain, "-", "anonymous", "-", "orders"],
        &server,
        "DENIED",
    );

    let props = admin_properties(tmp.path());
    let tool = |more: &[&str]| acls_live(&sasl, &props, more);
    tool(&[
        "--add",
        "--allow-principal",
        "User:alice",
        "--producer",
        "--consumer",
        "--topic",
        "orders",
    ]);
    tool(&[
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--group",
        "g-alice",
        "--resource-pattern-type",
        "prefixed",
    ]);
    let listed = tool(&["--list", "--principal", "User:alice"]);
    for line in [
        "name=orders, patternType=LITERAL",
        "operation=WRITE",
        "name=g-alice, patternType=PREFIXED",
    ] {
        assert!(listed.contains(line), "{line} not in:\n{listed}");
    }
    let alice_ok = |s: &ServerProc| {
        run_sasl_client(
            s,
            &[],
            &["confluent", &sasl, SCRAM, "alice", "alice-secret", "orders"],
            "OK",
        )
    };
    alice_ok(&server);
    // consumer-groups over SASL with the same --command-config.
    let groups = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "consumer-groups",
            "--bootstrap-server",
            &sasl,
            "--command-config",
            &props,
            "--list",
        ])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&groups.stdout);
    assert!(
        listed.contains("g-alice-SCRAM-SHA-256"),
        "{listed}{}",
        String::from_utf8_lossy(&groups.stderr)
    );

    server.kill9();
    server.restart_after_kill();
    alice_ok(&server);
    admin(&server);

    let removed = tool(&[
        "--remove",
        "--allow-principal",
        "User:alice",
        "--topic",
        "orders",
    ]);
    assert!(removed.contains("operation=READ"), "{removed}");
    alice_denied(&server);
}

#[test]
fn acl_apis_serve_admin_clients_and_refuse_everyone_else() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "admin", SCRAM, "admin-secret");
    users_set(&data, "carol", SCRAM, "carol-secret");
    let (server, _plain, sasl) = server(&data, &[]);
    acls(
        &["admin-api", &sasl, SCRAM, "admin", "admin-secret", "orders"],
        &server,
        "OK",
    );
    acls(
        &[
            "admin-api-denied",
            &sasl,
            SCRAM,
            "carol",
            "carol-secret",
            "orders",
        ],
        &server,
        "DENIED",
    );
    drop(server);

    let plain_only = tmp.path().join("plain");
    let unsecured = ServerProc::start(&plain_only, 1, &[("kafka.listen", "auto")]);
    let kafka = unsecured.kafka_addr();
    acls(
        &["admin-api-disabled", &kafka, "-", "-", "-", "orders"],
        &unsecured,
        "DISABLED",
    );
}

#[test]
fn offline_acls_are_in_force_at_the_first_start() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "admin", SCRAM, "admin-secret");
    let offline = |more: &[&str]| {
        let mut args = vec!["--data-dir", data.to_str().unwrap()];
        args.extend_from_slice(more);
        acls_tool(&args)
    };
    offline(&[
        "--add",
        "--allow-principal",
        "User:ANONYMOUS",
        "--operation",
        "Describe",
        "--topic",
        "*",
    ]);
    assert!(offline(&["--list"]).contains("principal=User:ANONYMOUS"));
    let (server, plain, sasl) = server(&data, &[]);
    // Anonymous may see topics but not write them.
    run_sasl_client(
        &server,
        &[],
        &["confluent", &sasl, SCRAM, "admin", "admin-secret", "seen"],
        "OK",
    );
    acls(
        &[
            "visible-not-writable",
            &plain,
            "-",
            "anonymous",
            "-",
            "seen",
        ],
        &server,
        "DENIED",
    );
    // The data directory is the running server's: the offline tool refuses it.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["acls", "--list", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("stop the server first"));
}

/// `shardlog ARGS` with `stdin`: (success, stdout and stderr).
fn native_tool(args: &[&str], stdin: &str) -> (bool, String) {
    let (out, err, ok) = common::cli::shardlog(args, Some(stdin));
    (ok, format!("{out}{err}"))
}

/// `shardlog acls --bootstrap-server SASL --command-config PROPS MORE...` (must succeed).
fn acls_live(sasl: &str, props: &str, more: &[&str]) -> String {
    let mut args = vec!["--bootstrap-server", sasl, "--command-config", props];
    args.extend_from_slice(more);
    acls_tool(&args)
}

#[test]
fn the_native_protocol_applies_the_same_acls() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "admin", SCRAM, "admin-secret");
    let (server, _plain, sasl) = server(&data, &[]);
    let native = server.addr();
    let create = [
        "topics",
        "create",
        "-b",
        &native,
        "--topic",
        "n",
        "--partitions",
        "2",
    ];
    let (ok, text) = native_tool(&create, "");
    assert!(
        !ok && text.contains("Authorization"),
        "created without CREATE: {text}"
    );
    let (ok, text) = native_tool(&["log-dirs", "-b", &native], "");
    assert!(!ok && text.contains("ClusterAuthorizationFailed"), "{text}");

    let props = admin_properties(tmp.path());
    let tool = |more: &[&str]| acls_live(&sasl, &props, more);
    tool(&[
        "--add",
        "--allow-principal",
        "User:ANONYMOUS",
        "--producer",
        "--topic",
        "n",
    ]);
    let (ok, text) = native_tool(&create, "");
    assert!(ok, "create with CREATE on the topic: {text}");
    let produce = ["produce", "-b", &native, "--topic", "n", "--partition", "0"];
    let (ok, text) = native_tool(&produce, "a\nb\n");
    assert!(ok, "produce with WRITE: {text}");
    let consume = [
        "consume",
        "-b",
        &native,
        "--topic",
        "n",
        "--partition",
        "0",
        "--offset",
        "0",
        "--max-records",
        "2",
    ];
    let (ok, text) = native_tool(&consume, "");
    assert!(
        !ok && text.contains("TopicAuthorizationFailed"),
        "read without READ: {text}"
    );
    tool(&[
        "--add",
        "--allow-principal",
        "User:ANONYMOUS",
        "--operation",
        "Describe",
        "--cluster",
    ]);
    let (ok, text) = native_tool(&["log-dirs", "-b", &native], "");
    assert!(ok, "{text}");
    // Issue 39: acls pointed at the (PLAINTEXT) native listener with the admin's SASL
    // config finds the SASL Kafka listener and manages the same ACLs there.
    let listed = acls_live(
        &native,
        &props,
        &["--list", "--principal", "User:ANONYMOUS"],
    );
    assert!(
        listed.contains("operation=DESCRIBE") && listed.contains("name=n,"),
        "{listed}"
    );
    drop(server);
}

/// Issue 39: the native OffsetFetch checks topic permissions as Kafka's does (a principal
/// allowed only on the group used to read any topic's committed offset): DESCRIBE on each
/// topic asked for, and a fetch of every topic leaves out those it may not describe. And
/// the security files are only their owner's (0600): a wider one is refused at start.
#[test]
fn native_offset_fetch_needs_the_topic_and_security_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    users_set(&data, "admin", SCRAM, "admin-secret");
    let offline = |more: &[&str]| {
        let mut args = vec!["--data-dir", data.to_str().unwrap()];
        args.extend_from_slice(more);
        acls_tool(&args)
    };
    let anonymous = ["--allow-principal", "User:ANONYMOUS"];
    offline(
        &[
            &["--add"],
            &anonymous[..],
            &["--operation", "Create", "--cluster"],
        ]
        .concat(),
    );
    offline(
        &[
            &["--add"],
            &anonymous[..],
            &["--consumer", "--group", "g", "--topic", "mine"],
        ]
        .concat(),
    );
    let other = [&anonymous[..], &["--operation", "Read", "--topic", "other"]].concat();
    offline(&[&["--add"], &other[..]].concat());
    let meta = data.join("__shardlog_meta");
    for file in ["acls", "scram-credentials"] {
        let mode = std::fs::metadata(meta.join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    let commit = |addr: String| {
        common::client(move || async move {
            let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
            for t in ["mine", "other"] {
                c.create_topic(t, 1, vec![]).await.unwrap();
            }
            let offsets = ["mine", "other"]
                .map(|t| (t.to_string(), 0, 0i64, String::new()))
                .to_vec();
            let codes = c.offset_commit("g", offsets).await.unwrap();
            assert!(
                codes
                    .iter()
                    .all(|c| c.2 == shardlog::protocol::ErrorCode::None),
                "{codes:?}"
            );
        })
    };
    let (mut server, _, _) = server(&data, &[]);
    commit(server.addr());
    server.kill9();
    // Read on "other" is taken away: its commit is no longer the anonymous user's to see.
    offline(&[&["--remove", "--force"], &other[..]].concat());
    server.respawn();
    let addr = server.addr();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let all = c.offset_fetch("g", None).await.unwrap();
        let topics: Vec<&str> = all.iter().map(|o| o.0.as_str()).collect();
        assert_eq!(topics, ["mine"], "{all:?}");
        let asked = c
            .offset_fetch("g", Some(vec!["other".into()]))
            .await
            .unwrap_err();
        assert_eq!(
            asked.code(),
            Some(shardlog::protocol::ErrorCode::TopicAuthorizationFailed),
            "{asked}"
        );
    });
    // A security file others may read is refused at start, naming the fix.
    server.kill9();
    std::fs::set_permissions(meta.join("acls"), std::fs::Permissions::from_mode(0o644)).unwrap();
    // A free port can be taken by a parallel test's server before this one binds: try again.
    let refusal = (0..5).find_map(|_| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(["serve", "--data-dir"])
            .arg(&data)
            .args(["--listen", &format!("127.0.0.1:{}", free_port())])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (!err.contains("is already served")).then_some((out.status.success(), err))
    });
    let (started, err) = refusal.expect("a free port within 5 tries");
    assert!(!started && err.contains("chmod 600"), "{err}");
}
