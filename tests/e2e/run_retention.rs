//! Run folders do not pile up (docs/executor.md, "Run folders"): a run keeps the newest
//! `--keep-runs` folders, its own among them, and `reviewflow prune` removes the older ones on
//! demand; what is not a run's, and what the local forge keeps, is never touched.

use std::path::{Path, PathBuf};

use crate::support::{Repo, reviewflow_in};

/// A run folder as an ended run leaves it, with a kept output.
fn ended_run(runs: &Path, id: &str) -> PathBuf {
    let dir = runs.join(id);
    std::fs::create_dir_all(dir.join("outputs/review")).expect("mkdir");
    std::fs::write(dir.join("outputs/review/comment"), "kept").expect("write");
    std::fs::write(dir.join("manifest.json"), r#"{"final":true}"#).expect("write");
    std::fs::write(dir.join("ended"), "").expect("write");
    dir
}

fn run_ids(runs: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(runs)
        .expect("runs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_run_keeps_the_newest_and_prune_removes_the_rest() {
    let repo = Repo::local_example();
    let runs = repo.path().join(".reviewflow/runs");
    for id in [
        "20200101T000000Z-0000000a",
        "20200102T000000Z-0000000b",
        "20200103T000000Z-0000000c",
    ] {
        ended_run(&runs, id);
    }
    // Not a run's: never counted, never removed.
    std::fs::create_dir_all(runs.join("my-notes")).expect("mkdir");
    // What the local forge keeps lives elsewhere and is not touched.
    let forge = repo.path().join(".reviewflow/forge/kept.md");
    std::fs::create_dir_all(forge.parent().expect("parent")).expect("mkdir");
    std::fs::write(&forge, "a review").expect("write");

    let out = reviewflow_in(
        repo.path(),
        &["run", "examples/local.kdl", "--keep-runs", "2"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ids = run_ids(&runs);
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[0], "20200103T000000Z-0000000c", "{ids:?}");
    assert_eq!(ids[2], "my-notes", "{ids:?}");
    let own = ids[1].clone();
    assert!(runs.join(&own).join("manifest.json").is_file(), "{own}");

    let out = reviewflow_in(repo.path(), &["prune", "--keep", "1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("removed run 20200103T000000Z-0000000c\n"),
        "{}",
        out.stderr
    );
    assert_eq!(run_ids(&runs), [own.as_str(), "my-notes"]);

    let out = reviewflow_in(repo.path(), &["prune", "--keep", "0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(run_ids(&runs), ["my-notes"]);
    assert_eq!(std::fs::read_to_string(&forge).expect("forge"), "a review");

    let out = reviewflow_in(
        repo.path(),
        &["run", "examples/local.kdl", "--keep-runs", "0"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
}
