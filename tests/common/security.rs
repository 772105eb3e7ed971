//! What the TLS and SASL tests share: users set offline with `shardlog users`, the
//! `sasl.py` client run to its expected last line, and a `serve` that must refuse to start.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::kafka_clients::{run_bounded, script};
use super::server_proc::{free_port, ServerProc};

/// `shardlog users set` with the password on stdin.
pub fn users_set(data: &Path, user: &str, mechanism: &str, password: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["users", "set", "--data-dir"])
        .arg(data)
        .args(["--user", user, "--mechanism", mechanism, "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "users set: {out:?}");
}

/// Runs `sasl.py args` with `env` and checks it printed the line `expect`.
pub fn run_sasl_client(server: &ServerProc, env: &[(&str, String)], args: &[&str], expect: &str) {
    run_client_script(server, "sasl.py", env, args, expect);
}

/// Runs the client script `name` with `args` and `env` and checks it printed `expect`.
pub fn run_client_script(
    server: &ServerProc,
    name: &str,
    env: &[(&str, String)],
    args: &[&str],
    expect: &str,
) {
    let mut cmd = script(name, args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_bounded(&mut cmd, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l == expect),
        "{name} {args:?}: {}\n{stdout}\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
}

/// kcat (librdkafka) against `addr` with `-X` properties `props`, then `args`, fed
/// `stdin`; its stdout (it must succeed within 30 s).
pub fn kcat(addr: &str, props: &[String], args: &[&str], stdin: &str) -> String {
    let mut cmd = Command::new("kcat");
    cmd.arg("-b").arg(addr);
    for p in props {
        cmd.arg("-X").arg(p);
    }
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), stdin).unwrap();
    cmd.args(args)
        .stdin(std::fs::File::open(input.path()).unwrap());
    let out = run_bounded(&mut cmd, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "kcat {props:?} {args:?}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `shardlog acls ARGS`; its stdout (it must succeed).
pub fn acls_tool(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("acls")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "acls {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `shardlog serve` with this config file text must exit at once; its stderr.
pub fn serve_refuses(dir: &Path, config: &str) -> String {
    let conf = dir.join("server.properties");
    std::fs::write(&conf, config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["serve", "--data-dir"])
        .arg(dir.join("data"))
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--config")
        .arg(&conf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "serve started: {stderr}");
    stderr
}
