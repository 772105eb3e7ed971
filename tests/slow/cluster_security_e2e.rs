//! SCRAM credentials and ACLs in cluster mode live in etcd and reach every node, through
//! real clients (confluent-kafka, `shardlog acls`) against three real processes: a user one
//! node's own file had seeds the cluster; a user created through one node authenticates on
//! the others; ACLs added through two nodes at once are both kept (compare-and-swap) and
//! enforced on a third; a restarted node whose own files are empty enforces the cluster's;
//! a removal through one node shuts the user out on another. Every wait is bounded.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::etcd::EtcdServer;
use common::kafka_clients::{run_bounded, script};
use common::security::{acls_tool, run_sasl_client, users_set};
use common::server_proc::ServerProc;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, ApiKey, DescribeClusterRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use shardlog::kafka::blocking_client::BlockingClient;
use shardlog::security::scram::Mechanism;

const SCRAM: &str = "SCRAM-SHA-256";
/// How long a change may take to reach every node (views are read every 200 ms).
const PROPAGATION: Duration = Duration::from_secs(15);

/// A node with a PLAINTEXT and a SASL listener and the authorizer on. The nodes reach each
/// other over PLAINTEXT as User:ANONYMOUS, a super user here (authenticated inter-node
/// traffic is issue 42's).
struct Node {
    proc: ServerProc,
    plain: String,
    sasl: String,
}

fn node(dir: &Path, etcd: &EtcdServer, id: i32) -> Node {
    let (id, endpoint) = (id.to_string(), etcd.endpoint());
    let keys = [
        ("cluster.etcd.endpoints", endpoint.as_str()),
        ("broker.id", id.as_str()),
        ("broker.session.timeout.ms", "3000"),
        ("broker.heartbeat.interval.ms", "200"),
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:auto,SASL_PLAINTEXT://127.0.0.1:auto",
        ),
        ("authorizer.enable", "true"),
        ("super.users", "User:admin;User:ANONYMOUS"),
    ];
    let proc = ServerProc::start(&dir.join(format!("node-{id}")), 1, &keys);
    let (plain, sasl) = (proc.listener("PLAINTEXT"), proc.listener("SASL_PLAINTEXT"));
    Node { proc, plain, sasl }
}

/// Waits (bounded) until `what` holds.
fn eventually(what: &str, mut holds: impl FnMut() -> bool) {
    let deadline = Instant::now() + PROPAGATION;
    while !holds() {
        assert!(
            Instant::now() < deadline,
            "not within {PROPAGATION:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether the client script printed the line `expect`.
fn client_says(name: &str, args: &[&str], expect: &str) -> bool {
    let out = run_bounded(&mut script(name, args), Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().any(|l| l == expect)
}

fn authenticates(node: &Node, user: &str, password: &str) -> bool {
    let args = ["probe", &node.sasl, SCRAM, user, password, "-"];
    client_says("sasl.py", &args, "OK")
}

fn brokers_seen(node: &Node) -> usize {
    let Ok(mut k) = BlockingClient::connect(&node.plain) else {
        return 0;
    };
    let request = RequestKind::DescribeCluster(DescribeClusterRequest::default());
    match k.call(ApiKey::DescribeCluster, 0, &request) {
        Ok(ResponseKind::DescribeCluster(r)) => r.brokers.len(),
        _ => 0,
    }
}

/// AlterUserScramCredentials sent to `node` itself (PLAINTEXT, a super user).
fn create_user(node: &Node, user: &str, password: &str) {
    let (mechanism, iterations, salt) = (Mechanism::Sha256, 4096, b"cluster-salt".to_vec());
    let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations);
    let upsertion = ScramCredentialUpsertion::default()
        .with_name(StrBytes::from_string(user.to_string()))
        .with_mechanism(mechanism.kafka_type())
        .with_iterations(iterations as i32)
        .with_salt(salt.into())
        .with_salted_password(salted.into());
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]);
    let mut k = BlockingClient::connect(&node.plain).unwrap();
    let kind = RequestKind::AlterUserScramCredentials(request);
    let Ok(ResponseKind::AlterUserScramCredentials(r)) =
        k.call(ApiKey::AlterUserScramCredentials, 0, &kind)
    else {
        panic!("AlterUserScramCredentials failed")
    };
    assert_eq!(
        r.results[0].error_code, 0,
        "{:?}",
        r.results[0].error_message
    );
}

/// `shardlog acls` against `node` over SASL as admin.
fn acls_on(node: &Node, props: &str, more: &[&str]) -> String {
    let mut args = vec!["--bootstrap-server", &node.sasl, "--command-config", props];
    args.extend_from_slice(more);
    acls_tool(&args)
}

fn admin_properties(dir: &Path) -> String {
    let path = dir.join("admin.properties");
    let text = format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism={SCRAM}\nsasl.username=admin\nsasl.password=admin-secret\n"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const ALICE_TOPIC: [&str; 6] = [
    "--allow-principal",
    "User:alice",
    "--producer",
    "--consumer",
    "--topic",
    "orders",
];
const ALICE_GROUPS: [&str; 9] = [
    "--allow-principal",
    "User:alice",
    "--operation",
    "Read",
    "--group",
    "g-alice",
    "--resource-pattern-type",
    "prefixed",
    "--add",
];

#[test]
fn credentials_and_acls_live_in_etcd_and_reach_every_node() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    // Only node 1's own file has the admin: it seeds the cluster's credentials.
    users_set(&tmp.path().join("node-1"), "admin", SCRAM, "admin-secret");
    let mut nodes: Vec<Node> = (1..=3).map(|id| node(tmp.path(), &etcd, id)).collect();
    eventually("every node sees three brokers", || {
        nodes.iter().all(|n| brokers_seen(n) == 3)
    });
    eventually("the seeded admin authenticates on node 3", || {
        authenticates(&nodes[2], "admin", "admin-secret")
    });

    create_user(&nodes[1], "alice", "alice-secret");
    for n in [&nodes[0], &nodes[2]] {
        eventually("alice, created on node 2, authenticates elsewhere", || {
            authenticates(n, "alice", "alice-secret")
        });
    }

    // Two nodes add ACLs at once: both changes are kept.
    let props = admin_properties(tmp.path());
    let mut topic = vec!["--add"];
    topic.extend_from_slice(&ALICE_TOPIC);
    std::thread::scope(|s| {
        s.spawn(|| acls_on(&nodes[0], &props, &topic));
        s.spawn(|| acls_on(&nodes[1], &props, &ALICE_GROUPS));
    });
    for n in &nodes {
        eventually("every node lists both nodes' ACLs", || {
            let listed = acls_on(n, &props, &["--list", "--principal", "User:alice"]);
            listed.contains("name=orders, patternType=LITERAL")
                && listed.contains("name=g-alice, patternType=PREFIXED")
        });
    }
    let confluent = |n: &Node, user: &str, password: &str| {
        let args = ["confluent", &n.sasl, SCRAM, user, password, "orders"];
        run_sasl_client(&n.proc, &[], &args, "OK");
    };
    confluent(&nodes[0], "admin", "admin-secret");
    confluent(&nodes[2], "alice", "alice-secret");

    // Node 3's own files are empty, before and after a restart: it enforces the cluster's.
    let meta = nodes[2].proc.data.join("__shardlog_meta");
    assert!(!meta.join("acls").exists() && !meta.join("scram-credentials").exists());
    nodes[2].proc.kill9();
    nodes[2].proc.respawn();
    assert!(authenticates(&nodes[2], "alice", "alice-secret"));
    confluent(&nodes[2], "alice", "alice-secret");

    let mut remove = vec!["--remove"];
    remove.extend_from_slice(&ALICE_TOPIC);
    acls_on(&nodes[2], &props, &remove);
    eventually(
        "the removal through node 3 shuts alice out on node 1",
        || {
            let args = [
                "denied",
                &nodes[0].sasl,
                SCRAM,
                "alice",
                "alice-secret",
                "orders",
            ];
            client_says("acls.py", &args, "DENIED")
        },
    );
}
