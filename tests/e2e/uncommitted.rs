//! The local forge reviews commits (docs/local-forge.md): a run in a checkout with uncommitted
//! edits to tracked files says, in one line, that they are not reviewed.

use crate::support::{Repo, reviewflow_in};

const SAID: &str = "warning: the checkout has uncommitted changes to tracked files: they are not reviewed (the review is of the commits ";

fn said(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("uncommitted"))
        .collect()
}

#[test]
fn uncommitted_edits_are_said_not_reviewed() {
    let repo = Repo::local_example();
    let run = || reviewflow_in(repo.path(), &["run", "examples/local.kdl", "--force"]);

    let out = run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(said(&out.stderr).is_empty(), "{}", out.stderr);

    // Untracked files are not edits of the change.
    std::fs::write(repo.path().join("notes.txt"), "scratch\n").expect("write");
    let out = run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(said(&out.stderr).is_empty(), "{}", out.stderr);

    std::fs::write(repo.path().join("src/lib.rs"), "pub fn g() {}\n").expect("write");
    let out = run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = said(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    let base = repo.git(&["rev-parse", "--short=12", "HEAD~1"]);
    let head = repo.git(&["rev-parse", "--short=12", "HEAD"]);
    assert!(lines[0].starts_with(SAID), "{}", lines[0]);
    assert!(lines[0].ends_with(")"), "{}", lines[0]);
    assert!(
        lines[0].contains(&base[..7]) && lines[0].contains(&head[..7]),
        "{} {base} {head}",
        lines[0]
    );
}
