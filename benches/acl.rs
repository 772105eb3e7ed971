//! The cost of one ACL check (Kafka's StandardAuthorizer decision on a shard's indexed
//! copy): authorizer off, a super user, and a principal checked against 10, 1,000 and
//! 100,000 ACLs (literal names, 100 prefixes, wildcards), next to one loopback TCP round
//! trip measured in the same run (the floor of any request).
//! `cargo bench --bench acl [-- --quick]`.

use std::hint::black_box;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use shardlog::security::acl::{
    AccessEntry, AclBinding, Operation, PatternType, Permission, ResourcePattern, ResourceType,
};
use shardlog::security::acl_store::AclStore;
use shardlog::security::authorizer::{self, AuthorizerConfig, Who};

fn binding(name: String, pattern: PatternType, principal: String, op: Operation) -> AclBinding {
    AclBinding {
        resource: ResourcePattern {
            kind: ResourceType::Topic,
            name,
            pattern,
        },
        entry: AccessEntry {
            principal,
            host: "*".into(),
            operation: op,
            permission: Permission::Allow,
        },
    }
}

/// `n` ACLs: one READ per (user, topic), 100 prefixed WRITEs, and a wildcard DESCRIBE.
fn store(n: usize) -> AclStore {
    let mut store = AclStore::default();
    for i in 0..n.saturating_sub(101) {
        let b = binding(
            format!("topic-{i}"),
            PatternType::Literal,
            format!("User:u{}", i % 50),
            Operation::Read,
        );
        store.add(b);
    }
    for i in 0..100.min(n) {
        store.add(binding(
            format!("team{i}-"),
            PatternType::Prefixed,
            "User:*".into(),
            Operation::Write,
        ));
    }
    store.add(binding(
        "*".into(),
        PatternType::Literal,
        "User:ops".into(),
        Operation::Describe,
    ));
    store
}

/// Nanoseconds per check, over `rounds` checks.
fn per_check(config: &AuthorizerConfig, who: &Who<'_>, topic: &str, rounds: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..rounds {
        black_box(config.authorize(
            black_box(who),
            Operation::Read,
            ResourceType::Topic,
            black_box(topic),
        ));
    }
    start.elapsed().as_nanos() as f64 / rounds as f64
}

/// The median of `n` loopback round trips of 1 byte, in nanoseconds.
fn loopback_round_trip(n: usize) -> f64 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let echo = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut b = [0u8; 1];
        while s.read_exact(&mut b).is_ok() && s.write_all(&b).is_ok() {}
    });
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_nodelay(true).unwrap();
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            c.write_all(b"x").unwrap();
            c.read_exact(&mut [0u8; 1]).unwrap();
            t.elapsed()
        })
        .collect();
    drop(c);
    echo.join().unwrap();
    times.sort();
    times[n / 2].as_nanos() as f64
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 200_000 } else { 2_000_000 };
    let rtt = loopback_round_trip(if quick { 2_000 } else { 20_000 });
    println!("loopback round trip (median): {:.1} us", rtt / 1000.0);
    let on = AuthorizerConfig {
        enabled: true,
        super_users: vec!["User:admin".into()],
        allow_everyone_if_no_acl_found: false,
    };
    let alice = Who {
        principal: "User:u7",
        host: "10.1.2.3",
    };
    let admin = Who {
        principal: "User:admin",
        host: "10.1.2.3",
    };
    let row = |label: &str, ns: f64| {
        println!(
            "{label:<48} {ns:>8.1} ns/check  {:>7.4} of a round trip",
            ns / rtt
        );
    };
    authorizer::install(store(10));
    row(
        "authorizer off",
        per_check(&AuthorizerConfig::default(), &alice, "topic-7", rounds),
    );
    row("super user", per_check(&on, &admin, "topic-7", rounds));
    for n in [10, 1_000, 100_000] {
        authorizer::install(store(n));
        let hit = format!("topic-{}", 7.min(n.saturating_sub(102)));
        row(
            &format!("{n} ACLs, literal allow"),
            per_check(&on, &alice, &hit, rounds),
        );
        row(
            &format!("{n} ACLs, prefixed match"),
            per_check(&on, &alice, "team42-orders", rounds),
        );
        row(
            &format!("{n} ACLs, no ACL names it (deny)"),
            per_check(&on, &alice, "unnamed", rounds),
        );
    }
}
