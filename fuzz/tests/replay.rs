//! Every input a fuzz target ever crashed on (`regressions/<target>/`) and every seed
//! (`seeds/<target>/`), through the same harness on stable: a fixed crash stays fixed.
//! An input in `regressions/<target>/unfixed/` is kept but not replayed (only a folder's own
//! files are): its crash is not fixed yet (`docs/fuzzing.md` names each), and the fix moves it
//! up a folder.

use std::path::Path;

fn replay(target: &str, harness: fn(&[u8])) {
    replay_with(target, harness, &[]);
}

/// As [`replay`], with more folders of seeds (relative to the workspace).
fn replay_with(target: &str, harness: fn(&[u8]), more: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    let mut folders: Vec<_> = ["regressions", "seeds"]
        .iter()
        .map(|f| root.join(f).join(target))
        .collect();
    folders.extend(more.iter().map(|f| root.join("..").join(f)));
    for folder in folders {
        let Ok(read) = std::fs::read_dir(&folder) else {
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

/// The pipeline seeds, and the official KDL v2 suite, through the syntax layer.
#[test]
fn parse() {
    replay_with(
        "parse",
        reviewflow_fuzz::parse,
        &["fuzz/seeds/pipeline", "engine/tests/kdl-suite/input"],
    );
}

#[test]
fn kdl_differential() {
    replay_with(
        "kdl_differential",
        reviewflow_fuzz::kdl_differential,
        &["fuzz/seeds/pipeline", "engine/tests/kdl-suite/input"],
    );
}

#[test]
fn prescan_parser() {
    replay_with(
        "prescan_parser",
        reviewflow_fuzz::prescan_parser,
        &["fuzz/seeds/pipeline", "engine/tests/kdl-suite/input"],
    );
}
