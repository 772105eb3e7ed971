//! Short version of scripts/crash-loop.sh: the real server binary, kill -9 at a random
//! moment while an acks=all producer records every acknowledgement, restart, verify.

mod common;

use std::time::Duration;

use common::client;
use common::server_proc::ServerProc;
use shardlog::tools::crash_check;

#[test]
fn kill_9_loses_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acks = tmp.path().join("acks");
    std::fs::write(&acks, "").unwrap();
    let mut server = ServerProc::start(&data, 2, &[]);
    let bootstrap = server.addr();
    let b = bootstrap.clone();
    client(move || async move {
        shardlog::client::Client::connect(&b)
            .await
            .expect("server up")
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
        // Waits until the killed process's listeners are gone: until then they accept and
        // reset connections, which the verifier would take for the new server.
        server.kill9();
        let produced = producer.join().unwrap().unwrap();
        server.respawn();
        let (b, a) = (bootstrap.clone(), acks.clone());
        let v = client(move || async move { crash_check::verify(&b, "crash", &a).await })
            .unwrap_or_else(|e| panic!("iteration {i}: {e}\nserver log:\n{}", server.log_text()));
        assert!(v.records_in_log >= v.acknowledged);
        assert!(v.acknowledged >= acknowledged + produced);
        acknowledged = v.acknowledged;
    }
    assert!(
        acknowledged > 0,
        "the producer never got an acknowledgement"
    );
    server.kill9();
}
