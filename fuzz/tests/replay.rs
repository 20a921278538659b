//! Every input a fuzz target ever crashed on (`regressions/<target>/`) and every seed
//! (`seeds/<target>/`), through the same harness on stable: a fixed crash stays fixed.

use std::path::Path;

fn replay(target: &str, harness: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for folder in ["regressions", "seeds"] {
        let Ok(read) = std::fs::read_dir(root.join(folder).join(target)) else {
            continue;
        };
        let mut paths: Vec<_> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths.into_iter().filter(|p| p.is_file()) {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            harness(&bytes);
            count += 1;
        }
    }
    assert!(count > 0, "no input replayed for `{target}`");
}

#[test]
fn pipeline() {
    replay("pipeline", reviewflow_fuzz::pipeline);
}

#[test]
fn envelope() {
    replay("envelope", reviewflow_fuzz::envelope);
}

#[test]
fn diff() {
    replay("diff", reviewflow_fuzz::diff);
}

#[test]
fn reviewer() {
    replay("reviewer", reviewflow_fuzz::reviewer);
}
