//! `reviewflow init`: a starting review.kdl that checks clean and runs, and never overwrites.

use std::path::Path;

use crate::support::{Run, git_in, reviewflow_in, root};

/// A git repository on `main` with two commits.
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git_in(dir.path(), &["init", "-q", "-b", "main"]);
    for (file, message) in [("README.md", "first"), ("lib.rs", "second")] {
        std::fs::write(dir.path().join(file), format!("{message}\n")).expect("write");
        git_in(dir.path(), &["add", "--", file]);
        git_in(dir.path(), &["commit", "-q", "-m", message]);
    }
    dir
}

/// `reviewflow run` without a conversation key in the environment.
fn run_without_key(dir: &Path, file: &str) -> Run {
    let out = crate::support::command()
        .args(["run", file])
        .current_dir(dir)
        .env_remove("REVIEW_CONVERSATION_KEY")
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn init_writes_a_pipeline_that_checks_clean_and_runs() {
    let c = checkout();
    let init = reviewflow_in(c.path(), &["init"]);
    insta::assert_snapshot!(init.transcript());
    assert!(c.path().join("review.kdl").is_file());

    let check = reviewflow_in(c.path(), &["check", "--fail-on", "warning", "review.kdl"]);
    assert_eq!(check.code, 0, "{}", check.transcript());
    assert!(
        check.stderr.contains("0 errors, 0 warnings"),
        "{}",
        check.transcript()
    );

    let run = run_without_key(c.path(), "review.kdl");
    assert_eq!(run.code, 0, "{}", run.transcript());
    let forge = c.path().join(".reviewflow/forge/branch-main/review");
    for file in ["posted.json", "review.md", "review.json", "review.sarif"] {
        assert!(
            forge.join(file).is_file(),
            "no {file} written:\n{}",
            run.transcript()
        );
    }
}

#[test]
fn init_twice_refuses_and_keeps_the_first_file() {
    let c = checkout();
    let first = reviewflow_in(c.path(), &["init"]);
    assert_eq!(first.code, 0, "{}", first.transcript());
    let path = c.path().join("review.kdl");
    let written = std::fs::read(&path).expect("review.kdl");

    let again = reviewflow_in(c.path(), &["init"]);
    insta::assert_snapshot!(again.transcript());
    assert_eq!(std::fs::read(&path).expect("review.kdl"), written);

    // A file the user edited is kept just the same.
    let edited = b"pipeline \"mine\"\n// edited\n".to_vec();
    std::fs::write(&path, &edited).expect("write");
    let again = reviewflow_in(c.path(), &["init"]);
    assert_eq!(again.code, 1, "{}", again.transcript());
    assert_eq!(std::fs::read(&path).expect("review.kdl"), edited);
}

/// The pipeline's nodes without comments or blank lines.
fn nodes(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn init_writes_the_local_example() {
    let c = checkout();
    let init = reviewflow_in(c.path(), &["init"]);
    assert_eq!(init.code, 0, "{}", init.transcript());
    let written = std::fs::read_to_string(c.path().join("review.kdl")).expect("review.kdl");
    let example =
        std::fs::read_to_string(root().join("examples/local.kdl")).expect("examples/local.kdl");
    let example = example.replace("pipeline \"local-review\"", "pipeline \"review\"");
    assert_eq!(
        nodes(&written),
        nodes(&example),
        "init writes examples/local.kdl (commented, named `review`): keep the two in step"
    );
}
