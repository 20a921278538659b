//! A new user's first hour: what `run` and `graph` say before anything is set up (a reviewer
//! program that is not installed, no git repository, no commit yet, no FILE given).

use std::path::Path;

use crate::support::{Repo, Run, reviewflow_in, root};

/// The local example with a `command` reviewer whose program no PATH holds.
const MISSING_REVIEWER: &str = r#"pipeline "missing-reviewer"
forge "local"
stage "gather" uses="std/gather"
stage "review" uses="std/review" {
    reviewer "command"
    command "reviewflow-no-such-reviewer" "--flag"
    untrusted "gather.diff"
    tries 2
}
"#;

/// The smallest pipeline that reads the change.
const GATHER_ONLY: &str = r#"pipeline "gather-only"
forge "local"
stage "gather" uses="std/gather"
"#;

fn run_in(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    reviewflow_in(dir, &all)
}

#[test]
fn a_command_reviewer_that_is_not_installed_is_said_once_with_the_fix() {
    let repo = Repo::init();
    repo.commit("pipeline.kdl", MISSING_REVIEWER, "pipeline");
    repo.commit("src/lib.rs", "pub fn f() {}\n", "a change");
    let out = run_in(repo.path(), &["pipeline.kdl"]);
    let log = out.transcript();
    assert_eq!(out.code, 1, "{log}");
    // One message, once: a missing program is not transient, so no try runs.
    assert_eq!(
        log.matches("`reviewflow-no-such-reviewer` is not installed")
            .count(),
        1,
        "{log}"
    );
    assert!(!log.contains("try 1"), "{log}");
    assert!(!log.contains("try 2"), "{log}");
    // The PATH that was searched, where it came from (nobody declared one), and the fix.
    assert!(!log.contains("declared PATH"), "{log}");
    assert!(log.contains("reviewflow's own PATH"), "{log}");
    assert!(log.contains("env \"PATH\""), "{log}");
    assert!(log.contains("absolute path"), "{log}");
}

#[test]
fn run_and_graph_read_review_kdl_when_no_file_is_given() {
    let repo = Repo::init();
    repo.commit("review.kdl", GATHER_ONLY, "pipeline");
    repo.commit("src/lib.rs", "pub fn f() {}\n", "a change");
    let out = run_in(repo.path(), &[]);
    assert_eq!(out.code, 0, "{}", out.transcript());
    let graph = reviewflow_in(repo.path(), &["graph"]);
    assert_eq!(graph.code, 0, "{}", graph.transcript());
    assert!(graph.stdout.contains("gather"), "{}", graph.transcript());
    // The help says so.
    let help = reviewflow_in(&root(), &["run", "--help"]);
    assert!(
        help.stdout.contains("[default: review.kdl]"),
        "{}",
        help.stdout
    );
    let help = reviewflow_in(&root(), &["graph", "--help"]);
    assert!(
        help.stdout.contains("[default: review.kdl]"),
        "{}",
        help.stdout
    );
}

#[test]
fn run_outside_a_git_repository_says_so_in_one_line_with_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("review.kdl"), GATHER_ONLY).expect("write");
    // A temp folder: outside any repository.
    let out = run_in(dir.path(), &["review.kdl"]);
    let log = out.transcript();
    assert_eq!(out.code, 2, "{log}");
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{log}");
    assert!(errors[0].contains("is not in a git repository"), "{log}");
    assert!(errors[0].contains("git init"), "{log}");
    assert!(!log.contains("fatal:"), "{log}");
}

#[test]
fn run_in_a_repository_without_commits_says_so_in_one_line_with_the_fix() {
    let repo = Repo::init();
    std::fs::write(repo.path().join("review.kdl"), GATHER_ONLY).expect("write");
    let out = run_in(repo.path(), &[]);
    let log = out.transcript();
    assert_eq!(out.code, 2, "{log}");
    let errors: Vec<&str> = out.stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{log}");
    assert!(errors[0].contains("has no commit yet"), "{log}");
    assert!(errors[0].contains("git commit"), "{log}");
    assert!(!log.contains("unknown revision"), "{log}");
}
