//! A network partition between processes on loopback: iptables rules that drop what one
//! user id's sockets send to given ports (the owner match sees every packet this host
//! sends), so nodes run as users of their own can be cut off from each other while the
//! test's clients and etcd, run as root, still reach every node. Needs root and iptables
//! (scripts/install-test-deps.sh). The rules live in a chain of their own, removed on drop
//! even when the test fails.
#![allow(dead_code)]

use std::process::Command;

pub struct Firewall {
    chain: String,
}

fn iptables(args: &[&str]) -> bool {
    let out = Command::new("iptables").arg("-w").args(args).output();
    let out = out.unwrap_or_else(|e| panic!("iptables (scripts/install-test-deps.sh): {e}"));
    out.status.success()
}

fn must(args: &[&str]) {
    assert!(
        iptables(args),
        "iptables {args:?} failed (the partition test needs root)"
    );
}

impl Firewall {
    pub fn new() -> Firewall {
        let chain = format!("SHARDLOG-{}-{}", std::process::id(), fastrand::u16(..));
        must(&["-N", &chain]);
        must(&["-I", "OUTPUT", "-o", "lo", "-j", &chain]);
        Firewall { chain }
    }

    /// Drops every TCP packet `uid`'s sockets send to any of `ports`, established
    /// connections included.
    pub fn block(&self, uid: u32, ports: &[u16]) {
        let uid = uid.to_string();
        for port in ports {
            let port = port.to_string();
            must(&[
                "-A",
                &self.chain,
                "-p",
                "tcp",
                "-m",
                "owner",
                "--uid-owner",
                &uid,
                "--dport",
                &port,
                "-j",
                "DROP",
            ]);
        }
    }

    /// Removes every rule: the partition heals.
    pub fn heal(&self) {
        must(&["-F", &self.chain]);
    }
}

impl Drop for Firewall {
    fn drop(&mut self) {
        iptables(&["-D", "OUTPUT", "-o", "lo", "-j", &self.chain]);
        iptables(&["-F", &self.chain]);
        iptables(&["-X", &self.chain]);
    }
}
