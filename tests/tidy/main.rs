//! House rules as a test (TigerBeetle's tidy.zig idea): the layout and habits ARCHITECTURE.md
//! states, checked over the non-test code of `src/`, which `source.rs` parses with `syn`
//! (a real Rust parser: groups in `use`, `super::` paths, macro arguments and `#[cfg(test)]`
//! items are read as the compiler reads them). Each rule either holds outright or has
//! a ratchet: the count of today's exceptions, which may shrink but never grow. The test
//! prints every figure it measures (`cargo test --test tidy -- --nocapture`).

use std::path::Path;

/// The floors, lowest first: a module may import from its own floor or below, never above.
/// Cross-cutting leaves (time, tasks, alloc_guard, metrics) sit at the bottom.
const FLOORS: &[&[&str]] = &[
    &[
        "format",
        "time",
        "tasks",
        "alloc_guard",
        "metrics",
        "error",
        "topic_partition",
        "replication",
        "service",
    ],
    &["io", "config", "admission"],
    &["log"],
    &["protocol", "kafka_codes", "broker_error"],
    &["settings", "security", "partition_ops"],
    &["catalog"],
    &["remote", "cluster"],
    &["groups", "txn"],
    &["shard"],
    &["net"],
    &["native", "kafka"],
    &["server"],
    &["client", "tools", "cli", "main", "lib"],
];

const MAX_FN_LINES: usize = 70;

/// Ratchets: today's exceptions. Lower them as the code improves; the test fails if a count
/// grows, and asks for the limit to be lowered when it shrinks.
const LONG_FNS: usize = 0;
const STRING_ERROR_FNS: usize = 0;
const STD_FS_OUTSIDE_IO: usize = 0;
const BACK_ARROWS: usize = 0;
const OPEN_PUBLIC_ENUMS: usize = 0;
/// The most files inside one folder that import each other (a circle of files): none.
const LARGEST_FILE_CYCLE: usize = 0;
/// Release assertions of stated invariants per 100 code lines. A folder below
/// `MIN_FOLDER_DENSITY` is thin: their count is a ratchet (the goal is none). The crate's
/// density may grow, never fall below `MIN_CRATE_DENSITY` (the goal is 1.0).
const MIN_FOLDER_DENSITY: f64 = 0.5;
const THIN_FOLDERS: usize = 0;
const MIN_CRATE_DENSITY: f64 = 0.9;

mod rules;
mod source;

use rules::*;
use source::Source;

fn load_sources() -> Vec<Source> {
    let out = source::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        out.len() > 50,
        "expected the whole of src/, found {}",
        out.len()
    );
    out
}

/// Folders whose release assertions are thinner than `MIN_FOLDER_DENSITY` (ratcheted), and
/// the crate's density against `MIN_CRATE_DENSITY`; prints every folder's figures.
fn thin_assertions(sources: &[Source], failures: &mut Vec<String>) {
    let mut thin = Vec::new();
    let by_unit = assertions(sources);
    println!("assertions (release / debug-only / per 100 code lines, release):");
    for (unit, a) in &by_unit {
        println!(
            "    {unit}: {} / {} / {:.2} ({} lines)",
            a.release,
            a.debug_only,
            a.density(),
            a.code_lines
        );
        let folder = sources.iter().any(|s| s.unit() == *unit && s.in_folder());
        if folder && a.density() < MIN_FOLDER_DENSITY {
            thin.push(format!("{unit}/: {:.2}", a.density()));
        }
    }
    let total = total(&by_unit);
    println!(
        "    crate: {} / {} / {:.2} ({} lines)",
        total.release,
        total.debug_only,
        total.density(),
        total.code_lines
    );
    let what = format!("folders below {MIN_FOLDER_DENSITY} release assertions per 100 lines");
    ratchet(&what, &thin, THIN_FOLDERS, failures);
    if total.density() < MIN_CRATE_DENSITY {
        failures.push(format!(
            "crate: {:.2} release assertions per 100 lines < {MIN_CRATE_DENSITY}",
            total.density()
        ));
    }
}

/// Checks one ratchet and prints its figure and exceptions.
fn ratchet(what: &str, found: &[String], limit: usize, failures: &mut Vec<String>) {
    println!("{what}: {} (limit {limit})", found.len());
    for f in found {
        println!("    {f}");
    }
    if found.len() > limit {
        failures.push(format!("{what}: {} > {limit}", found.len()));
    } else if found.len() < limit {
        failures.push(format!(
            "{what}: {} < {limit}: lower the limit in tests/tidy/main.rs",
            found.len()
        ));
    }
}

/// The floors ARCHITECTURE.md draws (its ```floors block, highest first), lowest first.
fn documented_floors() -> Vec<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(path).unwrap();
    let block = text
        .split("```floors\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("ARCHITECTURE.md has a ```floors block");
    let mut floors: Vec<Vec<String>> = block
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .filter(|f: &Vec<String>| !f.is_empty())
        .collect();
    floors.reverse();
    floors
}

#[test]
fn architecture_draws_the_floors_tidy_enforces() {
    let enforced: Vec<Vec<String>> = FLOORS
        .iter()
        .map(|f| f.iter().map(|u| u.to_string()).collect())
        .collect();
    assert_eq!(
        documented_floors(),
        enforced,
        "ARCHITECTURE.md's floors block and tests/tidy/main.rs FLOORS differ"
    );
}

#[test]
fn house_rules() {
    let sources = load_sources();
    let imports = unit_imports(&sources);
    let mut failures = Vec::new();
    let found_cycles = cycles(&imports);
    println!("cycles between folders: {}", found_cycles.len());
    for c in &found_cycles {
        println!("    {c}");
    }
    if !found_cycles.is_empty() {
        failures.push("folders import each other".to_string());
    }
    let file_sccs = file_cycles(&sources);
    let largest_scc = file_sccs.iter().map(|(n, _)| *n).max().unwrap_or(0);
    println!(
        "folders with files that import each other: {} (largest {largest_scc} files, limit {LARGEST_FILE_CYCLE})",
        file_sccs.len()
    );
    for (_, c) in &file_sccs {
        println!("    {c}");
    }
    if largest_scc != LARGEST_FILE_CYCLE {
        failures.push(format!(
            "largest file-level cycle: {largest_scc} files, limit {LARGEST_FILE_CYCLE}: \
             it may shrink (then lower LARGEST_FILE_CYCLE), never grow"
        ));
    }
    ratchet(
        "imports to a higher floor",
        &back_arrows(&imports),
        BACK_ARROWS,
        &mut failures,
    );
    ratchet(
        &format!("functions over {MAX_FN_LINES} lines"),
        &long_functions(&sources),
        LONG_FNS,
        &mut failures,
    );
    ratchet(
        "functions returning Result<_, String> outside the CLI",
        &string_error_functions(&sources),
        STRING_ERROR_FNS,
        &mut failures,
    );
    ratchet(
        "std::fs outside io/ and tools/",
        &std_fs_uses(&sources),
        STD_FS_OUTSIDE_IO,
        &mut failures,
    );
    ratchet(
        "public enums without #[non_exhaustive]",
        &open_public_enums(&sources),
        OPEN_PUBLIC_ENUMS,
        &mut failures,
    );
    thin_assertions(&sources, &mut failures);
    assert!(
        failures.is_empty(),
        "house rules broken:\n{}",
        failures.join("\n")
    );
}

/// Each rule fails on a fixture that breaks it and passes its fixed twin: the rules are
/// code, so they are tested like code.
mod rules_catch_what_they_name {
    use super::*;

    fn source(rel: &str, text: &str) -> Source {
        Source::parse(rel, text)
    }

    #[test]
    fn a_long_function_is_found_and_a_test_module_is_not_counted() {
        let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
        let long = source("log/a.rs", &format!("fn long() {{\n{body}}}\n"));
        assert_eq!(long_functions(&[long]), vec!["log/a.rs:long (72)"]);
        let in_tests = format!("#[cfg(test)]\nmod tests {{\n    fn long() {{\n{body}    }}\n}}\n");
        assert!(long_functions(&[source("log/a.rs", &in_tests)]).is_empty());
        let method =
            format!("struct S;\nimpl S {{\n    #[cfg(test)]\n    fn long() {{\n{body}    }}\n}}\n");
        assert!(long_functions(&[source("log/a.rs", &method)]).is_empty());
        let declared = "trait T {\n    fn f(&self);\n}\n";
        assert!(long_functions(&[source("log/a.rs", declared)]).is_empty());
    }

    #[test]
    fn a_string_error_is_found_outside_the_cli_only() {
        let text = "pub fn parse(\n    s: &str,\n) -> Result<u8, String> {\n    todo!()\n}\n";
        assert_eq!(
            string_error_functions(&[source("log/a.rs", text)]),
            vec!["log/a.rs:1"]
        );
        assert!(string_error_functions(&[source("tools/a.rs", text)]).is_empty());
        let typed = text.replace("String>", "ParseError>");
        assert!(string_error_functions(&[source("log/a.rs", &typed)]).is_empty());
        let in_trait = "trait T {\n    fn f(&self) -> std::result::Result<(), String>;\n}\n";
        assert_eq!(
            string_error_functions(&[source("log/a.rs", in_trait)]).len(),
            1
        );
    }

    #[test]
    fn std_fs_is_found_outside_io_and_tools_but_not_in_comments() {
        let text = "use std::fs::File;\n// std::fs in a comment\n";
        assert_eq!(std_fs_uses(&[source("log/a.rs", text)]), vec!["log/a.rs:1"]);
        assert!(std_fs_uses(&[source("io/a.rs", text)]).is_empty());
        let grouped = "use std::{fs, io};\nfn f() {\n    let _ = std::fs::read(\"x\");\n}\n";
        assert_eq!(
            std_fs_uses(&[source("log/a.rs", grouped)]),
            vec!["log/a.rs:1", "log/a.rs:3"]
        );
    }

    #[test]
    fn an_open_public_enum_is_found() {
        let open = "pub enum E {\n    A,\n}\n";
        assert_eq!(open_public_enums(&[source("log/a.rs", open)]).len(), 1);
        let closed = format!("/// Doc.\n#[non_exhaustive]\n{open}");
        assert!(open_public_enums(&[source("log/a.rs", &closed)]).is_empty());
        let private = "enum E {\n    A,\n}\n";
        assert!(open_public_enums(&[source("log/a.rs", private)]).is_empty());
    }

    #[test]
    fn an_import_upward_and_a_circle_between_folders_are_found() {
        let up = source("format/a.rs", "use crate::log::X;\n");
        let down = source("log/a.rs", "use crate::format::Y;\n");
        let imports = unit_imports(&[up, down]);
        assert_eq!(back_arrows(&imports).len(), 1);
        assert_eq!(cycles(&imports), vec!["format <-> log"]);
    }

    #[test]
    fn imports_in_groups_super_paths_and_macro_bodies_are_seen() {
        let grouped = source("format/a.rs", "use crate::{log::X, time};\n");
        let up_twice = source(
            "format/b/c.rs",
            "fn f() {\n    super::super::super::io::g();\n}\n",
        );
        let in_macro = source(
            "format/d.rs",
            "fn f() {\n    tracing::info!(x = %crate::net::N, \"m\");\n}\n",
        );
        let mut sources = vec![grouped, up_twice, in_macro];
        sources.extend(["log/x.rs", "io.rs", "net/x.rs", "time.rs"].map(|u| source(u, "")));
        let imports = unit_imports(&sources);
        let named: Vec<&String> = imports["format"].keys().collect();
        assert_eq!(named, ["io", "log", "net", "time"]);
    }

    #[test]
    fn a_circle_of_files_inside_a_folder_is_found_and_the_facade_is_not() {
        let a = source("shard/a.rs", "use super::b::B;\n");
        let b = source("shard/b.rs", "use crate::shard::c::C;\n");
        let c = source("shard/c.rs", "use super::a::A;\n");
        let facade = source("shard/mod.rs", "pub use a::A;\npub use d::D;\n");
        let d = source("shard/d.rs", "use super::a::A;\n");
        let found = file_cycles(&[a, b, c, facade, d]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0], (3, "shard: 3 (a, b, c)".to_string()));
    }

    #[test]
    fn a_subfolder_is_one_node_of_its_folders_graph() {
        let a = source("shard/a.rs", "use super::sub::B;\n");
        let b = source("shard/sub/b.rs", "use super::super::a::A;\n");
        let found = file_cycles(&[a, b]);
        assert_eq!(found, vec![(2, "shard: 2 (a, sub)".to_string())]);
    }

    #[test]
    fn release_and_debug_assertions_are_counted_apart() {
        let text = "/// Doc.\nfn f() {\n    assert!(true);\n    debug_assert!(true);\n    // assert!(x)\n    let _ = format!(\"{}\", {\n        assert_eq!(1, 1);\n        1\n    });\n}\n";
        let counted = assertions(&[source("log/a.rs", text)]);
        let log = &counted["log"];
        assert_eq!((log.release, log.debug_only, log.code_lines), (2, 1, 8));
    }
}
