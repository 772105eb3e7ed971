//! etcd over TLS with client certificates (a real etcd started with `--client-cert-auth`,
//! real processes): nodes given the CA and a certificate it signed form a cluster through
//! `https://` endpoints and replicate a topic with acks=all; a node without a client
//! certificate, or trusting another CA, is refused by etcd and stops at start with an
//! error naming etcd, never half-joined. Every wait is bounded in time.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::certs::TestCa;
use common::etcd::{EtcdServer, EtcdTls};
use common::server_proc::ServerProc;

use super::cluster_e2e::{members, wait_for_agreement};
use super::cluster_faults_e2e::{node_keys, node_with};
use super::cluster_topics_e2e::{create, produce_acks, wait_for_metadata};

const ACKS_ALL: i16 = -1;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The settings that reach etcd over TLS: the CA, and a client certificate if given.
fn tls_keys<'a>(ca: &'a str, client: Option<&'a (String, String)>) -> Vec<(&'a str, &'a str)> {
    let mut keys = vec![("cluster.etcd.ssl.ca.location", ca)];
    if let Some((cert, key)) = client {
        keys.push(("cluster.etcd.ssl.certificate.location", cert.as_str()));
        keys.push(("cluster.etcd.ssl.key.location", key.as_str()));
    }
    keys
}

#[test]
fn nodes_reach_etcd_over_tls_with_client_certificates_and_others_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ca = TestCa::new("etcd test CA");
    let tls = EtcdTls {
        keystore: PathBuf::from(write(tmp.path(), "etcd.pem", &ca.server_keystore())),
        ca: PathBuf::from(write(tmp.path(), "ca.pem", &ca.pem())),
    };
    let etcd = EtcdServer::start_tls(&tmp.path().join("etcd"), tls.clone());
    assert!(etcd.endpoint().starts_with("https://"));
    let (cert, key) = ca.client("shardlog", "broker");
    let client = (
        write(tmp.path(), "broker.pem", &cert),
        write(tmp.path(), "broker.key", &key),
    );
    let ca_file = tls.ca.display().to_string();
    let nodes: Vec<ServerProc> = (1..=2)
        .map(|id| {
            node_with(
                tmp.path(),
                &etcd,
                (id, None),
                &tls_keys(&ca_file, Some(&client)),
            )
        })
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    assert_eq!(
        create(&nodes[(controller - 1) as usize], "secured", 1, 2),
        (0, 2)
    );
    let (_, parts, _) = wait_for_metadata(&refs, "secured", |(e, p, _)| {
        *e == 0 && p.len() == 1 && p[0].leader > 0 && p[0].isr.len() == 2
    });
    let leader = &nodes[(parts[0].leader - 1) as usize];
    assert_eq!(
        produce_acks(leader, "secured", 0, "over tls", ACKS_ALL),
        (0, 0)
    );

    // No client certificate: etcd refuses the handshake and the node stops at start.
    let refused = start_fails(tmp.path(), &etcd, 3, &tls_keys(&ca_file, None));
    assert!(refused.contains("etcd is unreachable"), "{refused}");
    assert!(
        refused.contains("BadCertificate"),
        "the cause is named: {refused}"
    );
    // Trusting another CA: etcd's certificate is not believed.
    let stranger = TestCa::new("another CA");
    let other_ca = write(tmp.path(), "other-ca.pem", &stranger.pem());
    let refused = start_fails(tmp.path(), &etcd, 4, &tls_keys(&other_ca, Some(&client)));
    assert!(refused.contains("etcd is unreachable"), "{refused}");
    assert!(
        refused.contains("UnknownIssuer"),
        "the cause is named: {refused}"
    );
    // https endpoints without a CA: refused by the settings, before any connection.
    let refused = start_fails(tmp.path(), &etcd, 5, &[]);
    assert!(
        refused.contains("cluster.etcd.ssl.ca.location"),
        "{refused}"
    );
    // The two members are untouched by the refused ones.
    wait_for_agreement(&refs, &all, Duration::from_secs(10));
}

/// Runs `shardlog serve` as node `id` with `extra`, expecting it to exit with an error
/// within a bound: its stderr.
fn start_fails(dir: &Path, etcd: &EtcdServer, id: i32, extra: &[(&str, &str)]) -> String {
    let data = dir.join(format!("refused-{id}"));
    let kafka = format!("127.0.0.1:{}", common::server_proc::free_port());
    let mut extra = extra.to_vec();
    extra.push(("kafka.listen", &kafka));
    let keys = node_keys(etcd, id, &extra);
    let text: String = keys.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let conf = dir.join(format!("refused-{id}.properties"));
    std::fs::write(&conf, text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("serve")
        .arg("--data-dir")
        .arg(&data)
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", common::server_proc::free_port()))
        .arg("--config")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("node {id} kept running without reaching etcd");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "node {id} exited 0: {stderr}");
    stderr
}
