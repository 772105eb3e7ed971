//! Nodes that reach each other only over secured listeners (issue 42): three real processes whose one
//! Kafka listener is SASL_SSL, with the authorizer on and `inter.broker.listener.name`
//! SASL_SSL, each node logging in as `User:broker` (a super user, as Kafka's brokers are)
//! and checking the others' certificates against the test CA. A topic whose acks=all
//! produces need all three replicas takes librdkafka's records (so followers fetched them
//! over SASL_SSL), every node reports nothing under-replicated, `shardlog topics` creates,
//! alters and deletes it (through the Kafka API, as a cluster needs), and the nodes'
//! descriptors stay flat while the fetchers idle. A node whose login the cluster does not know
//! replicates nothing and says why in its log. Nodes whose one listener is SSL with client
//! certificates required replicate as their certificate's mapped principal. Every wait is
//! bounded.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::certs::TestCa;
use common::cli::shardlog;
use common::etcd::EtcdServer;
use common::security::{run_client_script, users_set};
use common::server_proc::ServerProc;

use super::cluster_faults_e2e::node_with;

const SCRAM: &str = "SCRAM-SHA-256";
const TOPIC: &str = "secured";

struct Files {
    keystore: String,
    ca: String,
}

fn files(dir: &Path) -> Files {
    let ca = TestCa::new("inter-node test CA");
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    Files {
        keystore: write("node.pem", ca.server_keystore()),
        ca: write("ca.pem", ca.pem()),
    }
}

fn jaas(password: &str) -> String {
    format!(
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="{password}";"#
    )
}

fn node(dir: &Path, etcd: &EtcdServer, f: &Files, id: i32, password: &str) -> ServerProc {
    let data = dir.join(format!("node-{id}"));
    std::fs::create_dir_all(&data).unwrap();
    users_set(&data, "admin", SCRAM, "admin-secret");
    users_set(&data, "broker", SCRAM, "broker-secret");
    let login = jaas(password);
    let keys = [
        ("listeners", "SASL_SSL://127.0.0.1:auto"),
        ("sasl.enabled.mechanisms", SCRAM),
        ("inter.broker.listener.name", "SASL_SSL"),
        ("sasl.mechanism.inter.broker.protocol", SCRAM),
        ("sasl.jaas.config", login.as_str()),
        // ANONYMOUS: the tools' native connection, PLAINTEXT on loopback (the nodes have no
        // PLAINTEXT Kafka listener, so they can only reach each other over SASL_SSL).
        ("super.users", "User:admin;User:broker;User:ANONYMOUS"),
    ];
    secured_node(dir, etcd, f, id, &keys)
}

/// A cluster node (`node_with`'s fast heartbeats) whose only Kafka listener is the one
/// `keys` names, with the test CA's TLS files, the authorizer on and three replicas by
/// default.
fn secured_node(
    dir: &Path,
    etcd: &EtcdServer,
    f: &Files,
    id: i32,
    keys: &[(&str, &str)],
) -> ServerProc {
    let common = [
        ("kafka.listen", "off"),
        ("ssl.keystore.location", f.keystore.as_str()),
        ("ssl.truststore.location", f.ca.as_str()),
        ("authorizer.enable", "true"),
        ("default.replication.factor", "3"),
    ];
    let all: Vec<(&str, &str)> = common.iter().chain(keys).copied().collect();
    node_with(dir, etcd, (id, None), &all)
}

/// `shardlog topics ACTION` as the admin over SASL_SSL; (stdout, success).
fn topics(node: &ServerProc, f: &Files, args: &[&str]) -> (String, bool) {
    tool(node, f, "topics", args)
}

/// `shardlog TOOL ARGS` as the admin over SASL_SSL; (stdout, success).
fn tool(node: &ServerProc, f: &Files, name: &str, args: &[&str]) -> (String, bool) {
    let addr = node.listener("SASL_SSL");
    let ca = format!("ssl.ca.location={}", f.ca);
    let mut all = vec![name, "-b", &addr, "-X", "security.protocol=SASL_SSL"];
    let props = ["sasl.mechanism=SCRAM-SHA-256", "sasl.username=admin"];
    for p in props.iter().chain(&["sasl.password=admin-secret", &ca]) {
        all.extend(["-X", p]);
    }
    all.extend(args);
    let (out, err, ok) = shardlog(&all, None);
    (format!("{out}{err}"), ok)
}

/// Waits (bounded) until `holds` says it does; the failure names what it saw last.
fn eventually(what: &str, within: Duration, mut holds: impl FnMut() -> (bool, String)) {
    let deadline = Instant::now() + within;
    loop {
        let (done, seen) = holds();
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not within {within:?}: {what}; last: {seen}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn metric(node: &ServerProc, name: &str) -> u64 {
    let report = node.metrics();
    let value = report.values.iter().find(|(n, _)| n == name);
    value.map_or_else(|| panic!("no metric {name}"), |(_, v)| *v)
}

#[test]
fn nodes_replicate_over_sasl_ssl_as_their_own_principal() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(tmp.path());
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node(tmp.path(), &etcd, &f, id, "broker-secret"))
        .collect();
    // All three live and known to each other (a create needs three replicas).
    eventually("a topic on three nodes", Duration::from_secs(30), || {
        let args = ["create", "--topic", TOPIC, "--partitions", "2"];
        let args = [&args[..], &["--config", "min.insync.replicas=3"]].concat();
        let (out, ok) = topics(&nodes[0], &f, &args);
        (ok, out)
    });
    let isr_of_three = || {
        // On the node the client asks below: it creates a topic it does not see.
        let (out, ok) = topics(&nodes[2], &f, &["describe", "--topic", TOPIC]);
        let full = out.lines().filter(|l| l.contains("Isr: ")).filter(|l| {
            let isr = l.split("Isr: ").nth(1).unwrap_or("");
            let isr = isr.split('\t').next().unwrap_or("");
            isr.split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .count()
                == 3
        });
        (ok && full.count() == 2, out)
    };
    eventually(
        "every replica in sync",
        Duration::from_secs(30),
        isr_of_three,
    );

    // acks=all with min.insync.replicas=3: each record is on every node before its ack.
    let env = [("SSL_CA", f.ca.clone())];
    let addr = nodes[2].listener("SASL_SSL");
    let args = ["confluent", &addr, SCRAM, "admin", "admin-secret", TOPIC];
    run_client_script(&nodes[2], "sasl.py", &env, &args, "OK");
    for n in &nodes {
        assert_eq!(
            metric(n, "under_replicated_partitions"),
            0,
            "{}",
            n.log_text()
        );
    }

    // The tool's other topic changes go through the Kafka API on a cluster too (the native
    // API changes one node only), and reach every node.
    let alter = ["alter", "--topic", TOPIC, "--partitions", "3"];
    let alter = [&alter[..], &["--config", "retention.ms=3600000"]].concat();
    let (out, ok) = topics(&nodes[0], &f, &alter);
    assert!(ok, "{out}");
    eventually("the change on node 3", Duration::from_secs(15), || {
        let (out, ok) = topics(&nodes[2], &f, &["describe", "--topic", TOPIC]);
        let seen = out.contains("PartitionCount: 3") && out.contains("retention.ms=3600000");
        (ok && seen, out)
    });

    // Creates taken by a node that is not the controller are forwarded to it over kept
    // connections: the controller sees one login from that node, not one per request.
    let (out, ok) = tool(&nodes[0], &f, "cluster", &["describe"]);
    assert!(ok, "{out}");
    let controller: i32 = out
        .split("Controller: ")
        .nth(1)
        .and_then(|r| r.split('\t').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no controller in {out}"));
    let at = |id: i32| &nodes[(id - 1) as usize];
    let via = if controller == 1 { 2 } else { 1 };
    let logins = metric(at(controller), "successful_authentications");
    for i in 0..6 {
        let name = format!("forwarded-{i}");
        let (out, ok) = topics(at(via), &f, &["create", "--topic", &name]);
        assert!(ok, "{out}");
    }
    let new_logins = metric(at(controller), "successful_authentications") - logins;
    assert!(
        new_logins <= 2,
        "{new_logins} logins for 6 forwarded creates"
    );

    // The fetchers idle on their long polls without growing the nodes' descriptors.
    let fds: Vec<usize> = nodes.iter().map(|n| n.open_fds()).collect();
    std::thread::sleep(Duration::from_secs(3));
    for (n, before) in nodes.iter().zip(fds) {
        assert!(
            n.open_fds() <= before + 2,
            "fds grew: {before} -> {}",
            n.open_fds()
        );
    }
    let (out, ok) = topics(&nodes[1], &f, &["delete", "--topic", TOPIC]);
    assert!(ok, "{out}");
    eventually("the topic gone", Duration::from_secs(15), || {
        let (out, _) = topics(&nodes[0], &f, &["list"]);
        (!out.lines().any(|l| l == TOPIC), out)
    });
}

#[test]
fn a_node_whose_login_is_refused_replicates_nothing_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(tmp.path());
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let good: Vec<ServerProc> = (1..=2)
        .map(|id| node(tmp.path(), &etcd, &f, id, "broker-secret"))
        .collect();
    let wrong = node(tmp.path(), &etcd, &f, 3, "not-the-password");
    eventually("a topic on three nodes", Duration::from_secs(30), || {
        let (out, ok) = topics(
            &good[0],
            &f,
            &["create", "--topic", TOPIC, "--partitions", "3"],
        );
        (ok, out)
    });
    eventually(
        "node 3's fetches refused, logged",
        Duration::from_secs(30),
        || {
            let log = wrong.log_text();
            let refused = log.contains("fetching from the leader failed")
                && log.contains(r#"SASL authentication as "broker" failed"#);
            (refused, log)
        },
    );
    // Node 3 follows the partitions the others lead and copies none of them.
    let under: u64 = good
        .iter()
        .map(|n| metric(n, "under_replicated_partitions"))
        .sum();
    assert!(under > 0, "node 3 cannot be in sync: {}", wrong.log_text());
}

/// A node whose one Kafka listener is SSL with client certificates required; nodes know
/// each other by their certificate, mapped to `User:broker` (KIP-371 rules).
fn mtls_node(dir: &Path, etcd: &EtcdServer, f: &Files, id: i32) -> ServerProc {
    let keys = [
        ("listeners", "SSL://127.0.0.1:auto"),
        ("ssl.client.auth", "required"),
        (
            "ssl.principal.mapping.rules",
            "RULE:^CN=shardlog test server$/broker/,DEFAULT",
        ),
        ("inter.broker.listener.name", "SSL"),
        ("super.users", "User:broker;User:ANONYMOUS"),
    ];
    secured_node(dir, etcd, f, id, &keys)
}

#[test]
fn nodes_replicate_over_mutual_tls_as_their_certificates_principal() {
    let tmp = tempfile::tempdir().unwrap();
    let f = files(tmp.path());
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| mtls_node(tmp.path(), &etcd, &f, id))
        .collect();
    let ssl = |node: &ServerProc, args: &[&str]| {
        let addr = node.listener("SSL");
        let mut all = vec!["topics", "-b", &addr, "-X", "security.protocol=SSL"];
        let ca = format!("ssl.ca.location={}", f.ca);
        let cert = format!("ssl.certificate.location={}", f.keystore);
        let key = format!("ssl.key.location={}", f.keystore);
        for p in [&ca, &cert, &key] {
            all.extend(["-X", p.as_str()]);
        }
        all.extend(args);
        let (out, err, ok) = shardlog(&all, None);
        (ok, format!("{out}{err}"))
    };
    eventually("a topic on three nodes", Duration::from_secs(30), || {
        let args = ["create", "--topic", TOPIC, "--partitions", "2"];
        ssl(
            &nodes[0],
            &[&args[..], &["--config", "min.insync.replicas=3"]].concat(),
        )
    });
    // The client's node must see the topic first (a client creates one it does not see).
    eventually("the topic on node 2", Duration::from_secs(30), || {
        let (ok, out) = ssl(&nodes[1], &["describe", "--topic", TOPIC]);
        (ok && out.contains("Partition: 1"), out)
    });
    // acks=all needs all three: the followers fetched over mutual TLS.
    let env = [
        ("SSL_CA", f.ca.clone()),
        ("SSL_CERT", f.keystore.clone()),
        ("SSL_KEY", f.keystore.clone()),
    ];
    let addr = nodes[1].listener("SSL");
    let args = ["confluent", &addr, "-", "broker", "-", TOPIC];
    run_client_script(&nodes[1], "sasl.py", &env, &args, "OK");
    for n in &nodes {
        assert_eq!(
            metric(n, "under_replicated_partitions"),
            0,
            "{}",
            n.log_text()
        );
    }
}
