//! Short version of scripts/crash-loop.sh: the real server binary, kill -9 at a random
//! moment while an acks=all producer records every acknowledgement, restart, verify.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::client;
use shardlog::tools::crash_check;

fn start(data: &std::path::Path, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_loses_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acks = tmp.path().join("acks");
    std::fs::write(&acks, "").unwrap();
    let port = fastrand::u16(10_000..32_000);
    let bootstrap = format!("127.0.0.1:{port}");
    let mut server = start(&data, port);
    let b = bootstrap.clone();
    client(move || async move {
        let mut c = None;
        for _ in 0..200 {
            if let Ok(x) = shardlog::client::Client::connect(&b).await {
                c = Some(x);
                break;
            }
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
        c.expect("server up")
            .create_topic("crash", 3, vec![("segment.bytes".into(), "262144".into())])
            .await
            .unwrap();
    });
    let mut acknowledged = 0;
    for i in 0..3u64 {
        let (b, a) = (bootstrap.clone(), acks.clone());
        let producer = std::thread::spawn(move || {
            client(move || async move {
                crash_check::produce(&b, "crash", &a, 3, Duration::from_secs(60), i).await
            })
        });
        std::thread::sleep(Duration::from_millis(fastrand::u64(150..700)));
        server.kill().unwrap(); // SIGKILL
        server.wait().unwrap();
        let produced = producer.join().unwrap().unwrap();
        server = start(&data, port);
        let (b, a) = (bootstrap.clone(), acks.clone());
        let v = client(move || async move { crash_check::verify(&b, "crash", &a).await })
            .unwrap_or_else(|e| panic!("iteration {i}: {e}"));
        assert!(v.records_in_log >= v.acknowledged);
        assert!(v.acknowledged >= acknowledged + produced);
        acknowledged = v.acknowledged;
    }
    assert!(
        acknowledged > 0,
        "the producer never got an acknowledgement"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}
