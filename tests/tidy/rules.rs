//! The house rules over parsed sources: each function finds one rule's exceptions.

use std::collections::{BTreeMap, BTreeSet};

use crate::source::Source;
use crate::{FLOORS, MAX_FN_LINES};

/// The CLI edge: tools, `main.rs` and `cli.rs` may use strings for errors and clap's open
/// enums, which are matched exhaustively on purpose.
const CLI_EDGE: &[&str] = &["tools", "main", "cli"];

/// Functions longer than [`MAX_FN_LINES`], as `file:fn (lines)`.
pub fn long_functions(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources {
        for f in s.facts.fns.iter().filter(|f| f.lines() > MAX_FN_LINES) {
            out.push(format!("{}:{} ({})", s.rel.display(), f.name, f.lines()));
        }
    }
    out
}

/// Signatures returning `Result<_, String>` outside the CLI edge.
pub fn string_error_functions(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| !s.in_unit(CLI_EDGE)) {
        for line in &s.facts.string_errors {
            out.push(format!("{}:{line}", s.rel.display()));
        }
    }
    out
}

/// Uses of `std::fs` outside `io/` (the storage seam) and `tools/` (offline files).
pub fn std_fs_uses(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| !s.in_unit(&["io", "tools"])) {
        let lines: BTreeSet<usize> = s
            .facts
            .paths
            .iter()
            .filter(|p| p.segments.len() > 1 && p.segments[..2] == ["std", "fs"])
            .map(|p| p.line)
            .collect();
        out.extend(lines.iter().map(|l| format!("{}:{l}", s.rel.display())));
    }
    out
}

/// Public enums without `#[non_exhaustive]` outside the CLI edge.
pub fn open_public_enums(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| !s.in_unit(CLI_EDGE)) {
        for line in &s.facts.open_enums {
            out.push(format!("{}:{line}", s.rel.display()));
        }
    }
    out
}

pub fn floor_of(unit: &str) -> usize {
    FLOORS
        .iter()
        .position(|f| f.contains(&unit))
        .unwrap_or_else(|| panic!("src/{unit} is on no floor: add it to FLOORS"))
}

/// Each node's imports: the node imported and the first file importing it.
pub type Imports = BTreeMap<String, BTreeMap<String, String>>;

/// The units (folders and root files) each unit names, through any path that resolves
/// into the crate (`crate::x`, and `super::`/`self::` resolved where they are written).
pub fn unit_imports(sources: &[Source]) -> Imports {
    let units: BTreeSet<String> = sources.iter().map(Source::unit).collect();
    let mut out: Imports = BTreeMap::new();
    for s in sources {
        let from = s.unit();
        let deps = out.entry(from.clone()).or_default();
        for path in s.facts.paths.iter().filter_map(|p| s.resolve(p)) {
            let Some(to) = path.first().filter(|u| **u != from && units.contains(*u)) else {
                continue;
            };
            deps.entry(to.clone())
                .or_insert_with(|| s.rel.display().to_string());
        }
    }
    out
}

/// Imports from a lower floor to a higher one, as `from -> to`.
pub fn back_arrows(imports: &Imports) -> Vec<String> {
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
pub fn reaches(imports: &Imports, from: &str, to: &str) -> bool {
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
pub fn cycles(imports: &Imports) -> Vec<String> {
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

/// Each folder's files (its `mod.rs`, the facade, left out; a subfolder is one node) and
/// the sibling nodes each one names, keyed by folder.
pub fn file_imports(sources: &[Source]) -> BTreeMap<String, Imports> {
    let mut out: BTreeMap<String, Imports> = BTreeMap::new();
    for s in sources.iter().filter(|s| s.in_folder()) {
        let module = s.module_path();
        let Some(node) = module.get(1).cloned() else {
            continue; // the folder's mod.rs
        };
        let folder = s.unit();
        let deps = out
            .entry(folder.clone())
            .or_default()
            .entry(node.clone())
            .or_default();
        for path in s.facts.paths.iter().filter_map(|p| s.resolve(p)) {
            if path.len() > 1 && path[0] == folder && path[1] != node {
                deps.entry(path[1].clone())
                    .or_insert_with(|| s.rel.display().to_string());
            }
        }
    }
    // Keep only names that are nodes of the folder (not items of its facade).
    for nodes in out.values_mut() {
        let names: BTreeSet<String> = nodes.keys().cloned().collect();
        for deps in nodes.values_mut() {
            deps.retain(|name, _| names.contains(name));
        }
    }
    out
}

/// The largest set of files in each folder that import each other (directly or through
/// others), as `(size, "folder: size (files)")`, folders without such a set left out.
pub fn file_cycles(sources: &[Source]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (folder, files) in file_imports(sources) {
        let largest = files
            .keys()
            .map(|a| {
                let scc: Vec<&str> = files
                    .keys()
                    .filter(|b| a == *b || (reaches(&files, a, b) && reaches(&files, b, a)))
                    .map(String::as_str)
                    .collect();
                scc
            })
            .max_by_key(Vec::len)
            .unwrap_or_default();
        if largest.len() > 1 {
            let names = largest.join(", ");
            out.push((
                largest.len(),
                format!("{folder}: {} ({names})", largest.len()),
            ));
        }
    }
    out
}

/// Assertions in one folder's (or root file's) non-test code: those kept in the release
/// build (`assert!`, `assert_eq!`, `assert_ne!`), the debug-only ones, and the code lines
/// they guard.
#[derive(Default)]
pub struct Asserted {
    pub release: usize,
    pub debug_only: usize,
    pub code_lines: usize,
}

impl Asserted {
    /// Release assertions per 100 code lines.
    pub fn density(&self) -> f64 {
        self.release as f64 * 100.0 / self.code_lines.max(1) as f64
    }

    fn add(&mut self, other: &Asserted) {
        self.release += other.release;
        self.debug_only += other.debug_only;
        self.code_lines += other.code_lines;
    }
}

pub fn assertions(sources: &[Source]) -> BTreeMap<String, Asserted> {
    let mut out: BTreeMap<String, Asserted> = BTreeMap::new();
    for s in sources {
        out.entry(s.unit()).or_default().add(&Asserted {
            release: s.facts.release_asserts,
            debug_only: s.facts.debug_asserts,
            code_lines: s.facts.code_lines,
        });
    }
    out
}

/// The crate's totals.
pub fn total(by_unit: &BTreeMap<String, Asserted>) -> Asserted {
    let mut total = Asserted::default();
    by_unit.values().for_each(|a| total.add(a));
    total
}
