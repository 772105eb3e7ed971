mod common;

use common::*;
use shardlog::client::Client;
use shardlog::protocol::ACKS_LEADER;

#[test]
fn smoke() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |_| {});
    client(move || async move {
        let addr = format!("127.0.0.1:{port}");
        let mut c = Client::connect(&addr).await.unwrap();
        c.create_topic("orders", 4, vec![]).await.unwrap();
        let md = c.metadata(None).await.unwrap();
        println!("{md:?}");
        for p in 0..4 {
            let b = single(1000 + p as i64, 10);
            let r = c.produce("orders", p, ACKS_LEADER, b.into()).await.unwrap();
            println!("{r:?}");
            let f = c.fetch("orders", p, 0, 1000).await.unwrap();
            assert!(!f.records.is_empty());
        }
    });
    server.stop().unwrap();
}
