//! The `shardlog` command line as users run it: a real process, its output and status.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `shardlog ARGS` (with `stdin` fed to it, if any): (stdout, stderr, success).
pub fn shardlog(args: &[&str], stdin: Option<&str>) -> (String, String, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        let mut input = input;
        input.write_all(text.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}
