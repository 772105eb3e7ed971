//! Replays every stored fuzz input (`fuzz/corpus/<target>/`, the minimised corpora of the
//! cargo-fuzz runs, and `fuzz/regressions/<target>/`, the inputs that once found a bug)
//! through the same checks the fuzz targets run, on the stable toolchain: a decoder change
//! that breaks on any of them fails `cargo test`.

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod checks;

use std::path::Path;

fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.expect("readable corpus entry").path())
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable corpus file");
            (p.display().to_string(), bytes)
        })
        .collect()
}

#[test]
fn every_stored_fuzz_input_passes_its_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for &(target, check) in checks::TARGETS {
        let mut stored = inputs(&root.join("corpus").join(target));
        assert!(
            !stored.is_empty(),
            "fuzz/corpus/{target} is empty: run the target and commit its minimised corpus"
        );
        stored.extend(inputs(&root.join("regressions").join(target)));
        for (path, bytes) in &stored {
            let outcome = std::panic::catch_unwind(|| check(bytes));
            assert!(outcome.is_ok(), "{path} fails the {target} check");
        }
        eprintln!("{target}: {} inputs", stored.len());
    }
    // dump_log's scratch files.
    let _ = std::fs::remove_dir_all(checks::scratch_dir());
}
