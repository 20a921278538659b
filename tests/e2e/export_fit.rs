//! What `reviewflow export github` refuses because the workflow could not do it
//! (`docs/export.md`, "What export refuses"), and the action it installs reviewflow with.

use std::path::Path;

use crate::support::{Run, reviewflow, reviewflow_in, root};

/// A repository holding `examples/review.kdl` as `.github/review.kdl`, after `edit`, with the
/// folder workflows are kept in.
fn repository(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join(".github/workflows")).expect("mkdir");
    let text = std::fs::read_to_string(root().join("examples/review.kdl")).expect("example");
    let edited = edit(text.clone());
    std::fs::write(dir.path().join(".github/review.kdl"), edited).expect("write");
    dir
}

fn export_to(dir: &Path, out: &str) -> Run {
    reviewflow_in(
        dir,
        &["export", "github", ".github/review.kdl", "--out", out],
    )
}

/// The line of `text` that holds `needle`, counted from 1.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("no line holds {needle:?}"))
}

#[test]
fn the_workflow_is_written_to_the_file_the_store_trusts() {
    let dir = repository(|t| t);
    let run = export_to(dir.path(), ".github/workflows/review.yml");
    assert_eq!(run.code, 0, "{}", run.transcript());
    let written =
        std::fs::read_to_string(dir.path().join(".github/workflows/review.yml")).expect("written");
    assert!(
        written.contains(
            "# Install it as .github/workflows/review.yml: the file the store's trust rules name.\n"
        ),
        "{written}"
    );
    // The kept export says where it goes, too.
    let kept = std::fs::read_to_string(root().join("examples/github/review.export.yml"))
        .expect("the kept export");
    assert!(
        kept.contains("# Install it as .github/workflows/review.yml:"),
        "{kept}"
    );
}

/// Copied as documented but written under another name, every push would review fresh: the
/// store believes only runs of the file its rules name.
#[test]
fn a_workflow_file_the_store_does_not_trust_is_refused() {
    let dir = repository(|t| t);
    let text = std::fs::read_to_string(dir.path().join(".github/review.kdl")).expect("read");
    let at = line_of(&text, "trust workflow=");
    let run = export_to(dir.path(), ".github/workflows/ai-review.yml");
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(&format!(
            "line {at}: store `conversations` believes runs of `.github/workflows/review.yml` on \
             `pull_request_target`, but this workflow is written to \
             `.github/workflows/ai-review.yml`"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "change line {at} to workflow=\".github/workflows/ai-review.yml\""
        )),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join(".github/workflows/ai-review.yml").exists());
    // The same file named by its absolute path.
    let absolute = dir.path().join(".github/workflows/ai-review.yml");
    let run = export_to(dir.path(), absolute.to_str().expect("utf-8"));
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(&format!(
            "change line {at} to workflow=\".github/workflows/ai-review.yml\""
        )),
        "{}",
        run.stderr
    );
    assert!(!absolute.exists());
}

#[test]
fn trust_rules_naming_two_files_for_the_workflows_own_runs_are_refused() {
    let dir = repository(|t| {
        t.replacen(
            "trust workflow=\".github/workflows/review.yml\" event=\"workflow_dispatch\"",
            "trust workflow=\".github/workflows/other.yml\" event=\"workflow_dispatch\"",
            1,
        )
    });
    let run = reviewflow_in(dir.path(), &["export", "github", ".github/review.kdl"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "name two files, `.github/workflows/review.yml` and `.github/workflows/other.yml`"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn a_publisher_without_a_write_permission_is_refused() {
    let dir = repository(|t| {
        t.replace(
            " permissions=\"pull-requests:write checks:write actions:read\"",
            "",
        )
    });
    let run = reviewflow_in(dir.path(), &["export", "github", ".github/review.kdl"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "stage `post` publishes but declares no write permission, so its job's token would \
             be read-only and it could post nothing"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("permissions=\""), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// `trigger` takes every registered platform's events; a workflow runs on GitHub's alone.
#[test]
fn a_trigger_of_another_platform_is_refused() {
    let dir = repository(|t| t.replacen("trigger \"workflow_dispatch\"", "trigger \"push\"", 1));
    let text = std::fs::read_to_string(dir.path().join(".github/review.kdl")).expect("read");
    let at = line_of(&text, "trigger \"push\"");
    let run = reviewflow_in(dir.path(), &["export", "github", ".github/review.kdl"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(&format!(
            "line {at}: `trigger \"push\"` is not an event of GitHub Actions, and a workflow runs \
             on GitHub's alone: name `pull_request_target`, `pull_request`, `workflow_dispatch`"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn a_store_kept_on_the_runner_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("local.kdl"),
        "pipeline \"local-store\"\n\
         trigger \"pull_request_target\" branches=\"main\"\n\
         store \"s\" kind=\"local\" {\n    trust local=#true\n    max-tries 10\n}\n\
         secret \"k\" env=\"SHAPES_KEY\" min-bytes=32 on-missing=\"disable\" {\n    \
         visible-to \"restore\"\n}\n\
         stage \"restore\" uses=\"std/restore\" on-error=\"fallback\" {\n    from \"s\"\n    \
         key \"k\"\n    bind repo=\"{repo}\" change=\"{change}\"\n}\n\
         stage \"review\" uses=\"std/review\" {\n    reviewer \"rules\"\n    \
         resume \"restore.conversation\"\n}\n",
    )
    .expect("write");
    let check = reviewflow_in(dir.path(), &["check", "local.kdl"]);
    assert_eq!(check.code, 0, "check passes it: {}", check.transcript());
    let run = reviewflow_in(dir.path(), &["export", "github", "local.kdl"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "line 3: store `s` is kind `local`, whose blobs stay on the machine that ran the job"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("kind=\"github-artifacts\""),
        "{}",
        run.stderr
    );
}

#[test]
fn the_action_is_a_setting_pinned_by_commit() {
    let rev = "0123456789abcdef0123456789abcdef01234567";
    let run = reviewflow(&[
        "export",
        "github",
        "examples/review.kdl",
        "--action",
        &format!("my-org/reviewflow@{rev}"),
    ]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stdout
            .matches(&format!("        uses: my-org/reviewflow@{rev}\n"))
            .count(),
        2,
        "every job installs it: {}",
        run.stdout
    );
    // The default is reviewflow's own repository, at a commit.
    let default = reviewflow(&["export", "github", "examples/review.kdl"]);
    assert!(
        default
            .stdout
            .contains("        uses: reviewflow/reviewflow@"),
        "{}",
        default.stdout
    );
    for bad in [
        "my-org/reviewflow@v1",
        "my-org/reviewflow@main",
        "my-org/reviewflow",
        "reviewflow@0123456789abcdef0123456789abcdef01234567",
    ] {
        let run = reviewflow(&["export", "github", "examples/review.kdl", "--action", bad]);
        assert_eq!(run.code, 2, "{bad}: {}", run.transcript());
        assert!(run.stderr.contains("error: --action"), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
}
