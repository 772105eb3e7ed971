//! House rules as a test (TigerBeetle's tidy.zig idea): the layout and habits ARCHITECTURE.md
//! states, checked over the non-test code of `src/`. Each rule either holds outright or has
//! a ratchet: the count of today's exceptions, which may shrink but never grow. The test
//! prints every figure it measures (`cargo test --test tidy -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
    ],
    &["io", "config", "admission"],
    &["log"],
    &["protocol", "kafka_codes", "broker_error"],
    &["settings", "security"],
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
const THIN_FOLDERS: usize = 1;
const MIN_CRATE_DENSITY: f64 = 0.55;

struct Source {
    /// Path relative to `src/`.
    rel: PathBuf,
    /// The module's non-test lines (a trailing `#[cfg(test)] mod` is cut off).
    lines: Vec<String>,
}

impl Source {
    /// The folder (or root file) the module belongs to: its floor's name.
    fn unit(&self) -> String {
        let first = self.rel.components().next().unwrap();
        let name = first.as_os_str().to_string_lossy();
        name.trim_end_matches(".rs").to_string()
    }

    fn in_unit(&self, units: &[&str]) -> bool {
        units.contains(&self.unit().as_str())
    }
}

fn load_sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    assert!(
        out.len() > 50,
        "expected the whole of src/, found {}",
        out.len()
    );
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<Source>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push(Source {
                rel: path.strip_prefix(root).unwrap().to_path_buf(),
                lines: non_test_lines(&text),
            });
        }
    }
}

/// Drops `#[cfg(test)]` items: the attribute, the item and its body (rustfmt's layout, so the
/// body ends at the first `}` with the attribute's indentation).
fn non_test_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut skipping: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(level) = skipping {
            if indent == level && line.trim_start().starts_with('}') {
                skipping = None;
            }
            continue;
        }
        if line.trim() == "#[cfg(test)]" {
            skipping = Some(indent);
            continue;
        }
        out.push(line.to_string());
    }
    out
}

/// Functions longer than [`MAX_FN_LINES`], as `file:fn (lines)`.
fn long_functions(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources {
        for (i, line) in s.lines.iter().enumerate() {
            let Some(name) = fn_name(line) else { continue };
            if is_declaration(&s.lines[i..]) {
                continue; // a trait's declaration without a body
            }
            let indent = line.len() - line.trim_start().len();
            let end = s.lines[i..]
                .iter()
                .position(|l| l.len() - l.trim_start().len() == indent && l.trim() == "}");
            let Some(len) = end.map(|e| e + 1) else {
                continue; // a declaration without a body
            };
            if len > MAX_FN_LINES {
                out.push(format!("{}:{name} ({len})", s.rel.display()));
            }
        }
    }
    out
}

/// Whether the signature starting `lines` ends in `;` before any body opens.
fn is_declaration(lines: &[String]) -> bool {
    for line in lines {
        let code = line.split("//").next().unwrap_or_default().trim_end();
        if code.contains('{') {
            return false;
        }
        if code.ends_with(';') {
            return true;
        }
    }
    false
}

fn fn_name(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t
        .strip_prefix("pub(crate) ")
        .or_else(|| t.strip_prefix("pub(super) "))
        .or_else(|| t.strip_prefix("pub "))
        .unwrap_or(t);
    let t = t.strip_prefix("async ").unwrap_or(t);
    let t = t.strip_prefix("fn ")?;
    let end = t.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&t[..end])
}

/// Signatures returning `Result<_, String>` outside the CLI edge (`tools/`, `main.rs`, `cli.rs`).
fn string_error_functions(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources
        .iter()
        .filter(|s| !s.in_unit(&["tools", "main", "cli"]))
    {
        for (i, line) in s.lines.iter().enumerate() {
            if fn_name(line).is_none() {
                continue;
            }
            let signature: String = s.lines[i..]
                .iter()
                .take_while(|l| !l.trim_end().ends_with('{') && !l.trim_end().ends_with(';'))
                .chain(s.lines[i..].iter().find(|l| l.trim_end().ends_with('{')))
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join(" ");
            let returns = signature.split("->").nth(1).unwrap_or("");
            if returns.contains("Result<") && returns.contains(", String>") {
                out.push(format!("{}:{}", s.rel.display(), i + 1));
            }
        }
    }
    out
}

/// Uses of `std::fs` outside `io/` (the storage seam) and `tools/` (offline files).
fn std_fs_uses(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| !s.in_unit(&["io", "tools"])) {
        for (i, line) in s.lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("std::fs") {
                out.push(format!("{}:{}", s.rel.display(), i + 1));
            }
        }
    }
    out
}

fn floor_of(unit: &str) -> usize {
    FLOORS
        .iter()
        .position(|f| f.contains(&unit))
        .unwrap_or_else(|| panic!("src/{unit} is on no floor: add it to FLOORS"))
}

/// Each unit's imports: the unit imported and the first file importing it.
type Imports = BTreeMap<String, BTreeMap<String, String>>;

/// The units each unit imports from (`crate::x`, and `super::x` seen from a folder's files).
fn unit_imports(sources: &[Source]) -> Imports {
    let units: BTreeSet<String> = sources.iter().map(Source::unit).collect();
    let mut out: Imports = BTreeMap::new();
    for s in sources {
        let from = s.unit();
        let deps = out.entry(from.clone()).or_default();
        for line in s.lines.iter().filter(|l| !l.trim_start().starts_with("//")) {
            for piece in line.split("crate::").skip(1) {
                let name: String = piece
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name != from && units.contains(&name) {
                    deps.entry(name)
                        .or_insert_with(|| s.rel.display().to_string());
                }
            }
        }
    }
    out
}

/// Imports from a lower floor to a higher one, as `from -> to`.
fn back_arrows(imports: &Imports) -> Vec<String> {
    let mut out = Vec::new();
    for (from, deps) in imports {
        for (to, file) in deps {
            if floor_of(to) > floor_of(from) {
                out.push(format!("{from} -> {to} (first in {file})"));
            }
        }
    }
    out
}

/// Whether `from` imports `to`, directly or through others.
fn reaches(imports: &Imports, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(u) = stack.pop() {
        for d in imports.get(&u).into_iter().flat_map(|d| d.keys()) {
            if d == to {
                return true;
            }
            if seen.insert(d.clone()) {
                stack.push(d.clone());
            }
        }
    }
    false
}

/// Pairs of units that import each other, directly or through others.
fn cycles(imports: &Imports) -> Vec<String> {
    let mut out = Vec::new();
    for a in imports.keys() {
        for b in imports.keys().filter(|b| a < *b) {
            if reaches(imports, a, b) && reaches(imports, b, a) {
                out.push(format!("{a} <-> {b}"));
            }
        }
    }
    out
}

/// Each folder's files (its `mod.rs`, the facade, left out) and the sibling files each one
/// names (`super::x`, `crate::folder::x`), keyed by folder.
fn file_imports(sources: &[Source]) -> BTreeMap<String, Imports> {
    let mut out: BTreeMap<String, Imports> = BTreeMap::new();
    for s in sources.iter().filter(|s| s.rel.components().count() > 1) {
        let folder = s.unit();
        let Some(file) = file_node(&s.rel).filter(|f| f != "mod") else {
            continue;
        };
        let deps = out
            .entry(folder.clone())
            .or_default()
            .entry(file.clone())
            .or_default();
        let prefixes = ["super::".to_string(), format!("crate::{folder}::")];
        for line in s.lines.iter().filter(|l| !l.trim_start().starts_with("//")) {
            for prefix in &prefixes {
                for piece in line.split(prefix.as_str()).skip(1) {
                    let name: String = piece
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if name != file && !name.is_empty() {
                        deps.insert(name, s.rel.display().to_string());
                    }
                }
            }
        }
    }
    // Keep only names that are files of the folder (not items of its facade).
    for files in out.values_mut() {
        let names: BTreeSet<String> = files.keys().cloned().collect();
        for deps in files.values_mut() {
            deps.retain(|name, _| names.contains(name));
        }
    }
    out
}

/// A file's node in its folder's graph: its stem, or its subfolder's name.
fn file_node(rel: &Path) -> Option<String> {
    let second = rel.components().nth(1)?;
    Some(
        second
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string(),
    )
}

/// The largest set of files in each folder that import each other (directly or through
/// others), as `folder: size (files)`, folders without such a set left out.
fn file_cycles(sources: &[Source]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (folder, files) in file_imports(sources) {
        let largest = files
            .keys()
            .map(|a| {
                let mut scc: Vec<&String> = files
                    .keys()
                    .filter(|b| a == *b || (reaches(&files, a, b) && reaches(&files, b, a)))
                    .collect();
                scc.sort();
                scc
            })
            .max_by_key(Vec::len)
            .unwrap_or_default();
        if largest.len() > 1 {
            let names: Vec<&str> = largest.iter().map(|s| s.as_str()).collect();
            out.push((
                largest.len(),
                format!("{folder}: {} ({})", largest.len(), names.join(", ")),
            ));
        }
    }
    out
}

/// Public enums without `#[non_exhaustive]` (outside the CLI edge, whose clap enums are
/// Public enums without `#[non_exhaustive]` (outside the CLI edge, whose clap enums are
/// matched exhaustively on purpose).
fn open_public_enums(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources
        .iter()
        .filter(|s| !s.in_unit(&["tools", "main", "cli"]))
    {
        for (i, line) in s.lines.iter().enumerate() {
            if !line.trim_start().starts_with("pub enum ") {
                continue;
            }
            let attrs = s.lines[..i].iter().rev().take_while(|l| {
                l.trim_start().starts_with("#[") || l.trim_start().starts_with("///")
            });
            if !attrs.into_iter().any(|l| l.contains("non_exhaustive")) {
                out.push(format!("{}:{}", s.rel.display(), i + 1));
            }
        }
    }
    out
}

/// Assertions in one folder's (or root file's) non-test code: those kept in the release
/// build (`assert!`, `assert_eq!`, `assert_ne!`), the debug-only ones, and the code lines
/// (neither blank nor comment) they guard.
#[derive(Default)]
struct Asserted {
    release: usize,
    debug_only: usize,
    code_lines: usize,
}

impl Asserted {
    /// Release assertions per 100 code lines.
    fn density(&self) -> f64 {
        self.release as f64 * 100.0 / self.code_lines.max(1) as f64
    }
}

fn assertions(sources: &[Source]) -> BTreeMap<String, Asserted> {
    let mut out: BTreeMap<String, Asserted> = BTreeMap::new();
    for s in sources {
        let unit = out.entry(s.unit()).or_default();
        for line in &s.lines {
            let code = line.split("//").next().unwrap_or("").trim();
            if code.is_empty() {
                continue;
            }
            unit.code_lines += 1;
            let asserts = ["assert!(", "assert_eq!(", "assert_ne!("];
            if asserts.iter().any(|a| code.contains(&format!("debug_{a}"))) {
                unit.debug_only += 1;
            } else if asserts.iter().any(|a| code.contains(a)) {
                unit.release += 1;
            }
        }
    }
    out
}

/// Folders whose release assertions are thinner than `MIN_FOLDER_DENSITY` (ratcheted), and
/// the crate's density against `MIN_CRATE_DENSITY`; prints every folder's figures.
fn thin_assertions(sources: &[Source], failures: &mut Vec<String>) {
    let mut thin = Vec::new();
    let by_unit = assertions(sources);
    let mut total = Asserted::default();
    println!("assertions (release / debug-only / per 100 code lines, release):");
    for (unit, a) in &by_unit {
        println!(
            "    {unit}: {} / {} / {:.2} ({} lines)",
            a.release,
            a.debug_only,
            a.density(),
            a.code_lines
        );
        total.release += a.release;
        total.debug_only += a.debug_only;
        total.code_lines += a.code_lines;
        let folder = sources
            .iter()
            .any(|s| s.unit() == *unit && s.rel.components().count() > 1);
        if folder && a.density() < MIN_FOLDER_DENSITY {
            thin.push(format!("{unit}/: {:.2}", a.density()));
        }
    }
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
            "{what}: {} < {limit}: lower the limit in tests/tidy.rs",
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
        "ARCHITECTURE.md's floors block and tests/tidy.rs FLOORS differ"
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
        Source {
            rel: PathBuf::from(rel),
            lines: non_test_lines(text),
        }
    }

    #[test]
    fn a_long_function_is_found_and_a_test_module_is_not_counted() {
        let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
        let long = source("log/a.rs", &format!("fn long() {{\n{body}}}\n"));
        assert_eq!(long_functions(&[long]).len(), 1);
        let in_tests = format!("#[cfg(test)]\nmod tests {{\n    fn long() {{\n{body}    }}\n}}\n");
        assert!(long_functions(&[source("log/a.rs", &in_tests)]).is_empty());
    }

    #[test]
    fn a_string_error_is_found_outside_the_cli_only() {
        let text = "pub fn parse(\n    s: &str,\n) -> Result<u8, String> {\n    todo!()\n}\n";
        assert_eq!(string_error_functions(&[source("log/a.rs", text)]).len(), 1);
        assert!(string_error_functions(&[source("tools/a.rs", text)]).is_empty());
        let typed = text.replace("String>", "ParseError>");
        assert!(string_error_functions(&[source("log/a.rs", &typed)]).is_empty());
    }

    #[test]
    fn std_fs_is_found_outside_io_and_tools_but_not_in_comments() {
        let text = "use std::fs::File;\n// std::fs in a comment\n";
        assert_eq!(std_fs_uses(&[source("log/a.rs", text)]), vec!["log/a.rs:1"]);
        assert!(std_fs_uses(&[source("io/a.rs", text)]).is_empty());
    }

    #[test]
    fn an_open_public_enum_is_found() {
        let open = "pub enum E {\n    A,\n}\n";
        assert_eq!(open_public_enums(&[source("log/a.rs", open)]).len(), 1);
        let closed = format!("/// Doc.\n#[non_exhaustive]\n{open}");
        assert!(open_public_enums(&[source("log/a.rs", &closed)]).is_empty());
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
    fn release_and_debug_assertions_are_counted_apart() {
        let text = "fn f() {\n    assert!(true);\n    debug_assert!(true);\n    // assert!(x)\n}\n";
        let counted = assertions(&[source("log/a.rs", text)]);
        let log = &counted["log"];
        assert_eq!((log.release, log.debug_only, log.code_lines), (1, 1, 4));
    }
}
