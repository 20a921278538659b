//! `reviewflow run --fail-on error|warning|never` and `--fail-on-new`: the exit status says what
//! `std/post` published, and a review that did not run is "not reviewed", never a pass
//! (docs/executor.md, "Failing the run on findings").

use crate::support::{Repo, Run};

/// Three conflict markers: three `error` findings of the `rules` reviewer.
const CONFLICT: &str = "fn f() {}\n<<<<<<< HEAD\nlet a = 1;\n=======\nlet a = 2;\n>>>>>>> other\n";
/// A `warning` of the `rules` reviewer.
const DEBUG: &str = "console.log('here');\n";

/// Reviews the whole change on every push (`examples/local.kdl` reviews only what is new since
/// the last review, so a finding that stays would not be seen again).
const WHOLE: &str = r#"pipeline "fail-on"
forge "local"
stage "gather" uses="std/gather"
stage "review" uses="std/review" {
    reviewer "rules"
    untrusted "gather.diff"
}
stage "post" uses="std/post" {
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
}
"#;

/// A reviewer that fails every try, the review falling back; the post publishes only a review
/// that ran.
const FELL_BACK_GATED: &str = r#"pipeline "fell-back"
forge "local"
stage "gather" uses="std/gather"
stage "review" uses="std/review" on-error="fallback" {
    reviewer "command"
    command "false"
    untrusted "gather.diff"
    tries 2
}
stage "post" uses="std/post" when="review.commented" {
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
}
"#;

/// The same, but the post runs anyway and publishes the absent review.
const FELL_BACK_POSTED: &str = r#"pipeline "fell-back"
forge "local"
stage "gather" uses="std/gather"
stage "review" uses="std/review" on-error="fallback" {
    reviewer "command"
    command "false"
    untrusted "gather.diff"
    tries 2
}
stage "post" uses="std/post" {
    allow "fail-closed" reason="the post says itself that the review did not run"
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
}
"#;

/// The same, the post failing the review that did not run: no `allow` needed.
fn fell_back_failed() -> String {
    let text = FELL_BACK_POSTED
        .replace(
            "    allow \"fail-closed\" reason=\"the post says itself that the review did not run\"\n",
            "",
        )
        .replace(
            "    require-head \"gather.head\"\n}",
            "    require-head \"gather.head\"\n    not-reviewed \"fail\"\n}",
        );
    assert!(
        text.contains("not-reviewed") && !text.contains("allow"),
        "{text}"
    );
    text
}

/// Runs `reviewflow run` in the repository.
fn run(repo: &Repo, args: &[&str]) -> Run {
    let out = crate::support::command()
        .arg("run")
        .args(args)
        .current_dir(repo.path())
        .env_remove("REVIEW_CONVERSATION_KEY")
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A repository with `pipeline.kdl` on `main` and a branch `feature` checked out: every push to
/// it is part of one change, whose base stays the `main` commit.
fn feature_repo(pipeline: &str) -> Repo {
    let repo = Repo::init();
    repo.commit("pipeline.kdl", pipeline, "pipeline");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo
}

/// A run must never read as a review with no findings when it was not reviewed.
fn assert_not_reviewed(out: &Run) {
    let log = out.transcript();
    assert!(log.contains("not reviewed: "), "{log}");
    assert!(!log.contains("no published finding"), "{log}");
    assert!(!log.contains("no new published finding"), "{log}");
}

#[test]
fn fail_on_error_with_a_blocking_finding_exits_3() {
    let repo = Repo::local_example();
    repo.commit("src/merge.rs", CONFLICT, "a merge gone wrong");
    let out = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    let log = out.transcript();
    assert_eq!(out.code, 3, "{log}");
    assert!(
        log.contains("post: published 3 errors, 0 warnings, 0 info"),
        "{log}"
    );
    assert!(
        log.contains("--fail-on error: 3 published findings at or above error (exit 3)"),
        "{log}"
    );
    // The engine's run itself succeeded, and its end line leaves the exit to the verdict: the
    // status is the findings'.
    assert!(log.contains("run succeeded\n"), "{log}");
    assert!(!log.contains("(exit 0)"), "{log}");
    assert_eq!(
        out.stderr.lines().last(),
        Some("--fail-on error: 3 published findings at or above error (exit 3)"),
        "{log}"
    );
    // What was judged is the post's `published` output, kept with the run.
    let published = published_of_last_run(&repo);
    assert_eq!(published["reviewed"], true, "{published}");
    assert_eq!(published["findings"]["error"], 3, "{published}");
    assert_eq!(published["new"]["error"], 3, "{published}");
}

#[test]
fn fail_on_error_without_a_blocking_finding_exits_0() {
    let repo = Repo::local_example();
    repo.commit("src/debug.js", DEBUG, "a warning only");
    let out = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    let log = out.transcript();
    assert_eq!(out.code, 0, "{log}");
    assert!(
        log.contains("--fail-on error: no published finding at or above error (exit 0)\n"),
        "{log}"
    );
    assert!(!log.contains("not reviewed"), "{log}");
}

#[test]
fn fail_on_warning_fails_on_a_warning() {
    let repo = Repo::local_example();
    repo.commit("src/debug.js", DEBUG, "a warning only");
    let out = run(&repo, &["examples/local.kdl", "--fail-on", "warning"]);
    let log = out.transcript();
    assert_eq!(out.code, 3, "{log}");
    assert!(
        log.contains("--fail-on warning: 1 published finding at or above warning (exit 3)"),
        "{log}"
    );
}

#[test]
fn by_default_findings_do_not_change_the_exit_status() {
    let repo = Repo::local_example();
    repo.commit("src/merge.rs", CONFLICT, "a merge gone wrong");
    let out = run(&repo, &["examples/local.kdl"]);
    let log = out.transcript();
    assert_eq!(out.code, 0, "{log}");
    assert!(!log.contains("--fail-on"), "{log}");
    let out = run(
        &repo,
        &["examples/local.kdl", "--force", "--fail-on", "never"],
    );
    assert_eq!(out.code, 0, "{}", out.transcript());
}

#[test]
fn fail_on_new_counts_only_the_findings_a_push_added() {
    let repo = feature_repo(WHOLE);
    let args = ["pipeline.kdl", "--fail-on", "warning", "--fail-on-new"];
    // Push 1: nothing to compare with, so every finding is new.
    repo.commit_file("web/debug.js", DEBUG, "push 1");
    let out = run(&repo, &args);
    let log = out.transcript();
    assert_eq!(out.code, 3, "{log}");
    assert!(
        log.contains(
            "--fail-on warning --fail-on-new: 1 new published finding at or above warning (exit 3)"
        ),
        "{log}"
    );

    // Push 2: a clean file; the warning persists.
    repo.commit_file("web/clean.rs", "pub fn g() {}\n", "push 2");
    let out = run(&repo, &args);
    let log = out.transcript();
    assert_eq!(out.code, 0, "{log}");
    assert!(
        log.contains(
            "post: published 0 errors, 1 warning, 0 info (new: 0 errors, 0 warnings, 0 info)"
        ),
        "{log}"
    );
    assert!(
        log.contains(
            "--fail-on warning --fail-on-new: no new published finding at or above warning"
        ),
        "{log}"
    );
    // Without --fail-on-new the persisting warning still fails.
    let out = run(&repo, &["pipeline.kdl", "--force", "--fail-on", "warning"]);
    assert_eq!(out.code, 3, "{}", out.transcript());

    // Push 3: a new warning beside the persisting one.
    repo.commit_file("web/more.js", DEBUG, "push 3");
    let out = run(&repo, &args);
    let log = out.transcript();
    assert_eq!(out.code, 3, "{log}");
    assert!(log.contains("(new: 0 errors, 1 warning, 0 info)"), "{log}");
}

#[test]
fn fail_on_new_alone_fails_on_new_errors() {
    let repo = feature_repo(WHOLE);
    repo.commit_file("web/debug.js", DEBUG, "a warning");
    let out = run(&repo, &["pipeline.kdl", "--fail-on-new"]);
    let log = out.transcript();
    assert_eq!(out.code, 0, "a warning is below error: {log}");
    assert!(
        log.contains("--fail-on error --fail-on-new: no new published finding at or above error"),
        "{log}"
    );
    repo.commit_file("web/merge.rs", CONFLICT, "errors");
    let out = run(&repo, &["pipeline.kdl", "--fail-on-new"]);
    assert_eq!(out.code, 3, "{}", out.transcript());
}

#[test]
fn a_review_that_fell_back_is_not_reviewed_and_fails() {
    let repo = feature_repo(FELL_BACK_GATED);
    repo.commit_file("web/merge.rs", CONFLICT, "a change");
    let out = run(&repo, &["pipeline.kdl", "--fail-on", "error"]);
    let log = out.transcript();
    assert_eq!(out.code, 4, "{log}");
    assert_not_reviewed(&out);
    assert!(
        log.contains("not reviewed: `post` was skipped: `when` review.commented is false — `review` fell back: no review after 2 tries"),
        "the post and the review's reason are said: {log}"
    );
    assert!(
        log.contains("--fail-on error: not reviewed (exit 4)"),
        "{log}"
    );
}

#[test]
fn a_review_that_fell_back_is_said_even_without_fail_on() {
    let repo = feature_repo(FELL_BACK_GATED);
    repo.commit_file("web/merge.rs", CONFLICT, "a change");
    let out = run(&repo, &["pipeline.kdl"]);
    let log = out.transcript();
    assert_eq!(out.code, 0, "the exit status is the run's own: {log}");
    assert_not_reviewed(&out);
    assert!(!log.contains("--fail-on"), "{log}");
}

#[test]
fn a_post_of_a_review_that_fell_back_publishes_not_reviewed() {
    let repo = feature_repo(&crate::support::with_allow_ids(FELL_BACK_POSTED));
    repo.commit_file("web/merge.rs", CONFLICT, "a change");
    let out = run(&repo, &["pipeline.kdl", "--fail-on", "warning"]);
    let log = out.transcript();
    assert_eq!(out.code, 4, "{log}");
    assert_not_reviewed(&out);
    assert!(
        log.contains(
            "not reviewed: `post` published no review: `review` fell back: no review after 2 tries"
        ),
        "{log}"
    );
    let published = published_of_last_run(&repo);
    assert_eq!(published["reviewed"], false, "{published}");
    assert!(
        published["reason"]
            .as_str()
            .is_some_and(|r| r.contains("did not run")),
        "{published}"
    );
}

/// The last line of a transcript: the one that states the exit the process returns.
fn last_line(out: &Run) -> String {
    out.stderr.lines().last().unwrap_or_default().to_string()
}

/// The files the local forge wrote (its `.gitignore` aside).
fn forge_files(repo: &Repo) -> Vec<std::path::PathBuf> {
    crate::support::files_under(&repo.path().join(".reviewflow/forge"))
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n != ".gitignore"))
        .collect()
}

/// The local forge's `posted.json` of the one change reviewed.
fn posted_record(repo: &Repo) -> std::path::PathBuf {
    crate::support::files_under(&repo.path().join(".reviewflow/forge"))
        .into_iter()
        .find(|f| f.file_name().is_some_and(|n| n == "posted.json"))
        .expect("a posted.json")
}

#[test]
fn a_rerun_on_a_reviewed_head_passes_what_passed() {
    let repo = Repo::local_example();
    repo.commit("src/debug.js", DEBUG, "a warning only");
    let first = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    assert_eq!(first.code, 0, "{}", first.transcript());
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(posted_record(&repo)).expect("record"))
            .expect("json");
    assert_eq!(record["published"]["findings"]["warning"], 1, "{record}");
    assert_eq!(record["published"]["new"]["warning"], 1, "{record}");

    let again = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    let log = again.transcript();
    assert!(log.contains("was already reviewed"), "{log}");
    assert_eq!(again.code, 0, "a green job re-run stays green: {log}");
    assert!(
        log.contains("post: did not run: `gather` stopped the run; the review last posted for this head (run "),
        "{log}"
    );
    assert!(
        log.contains(") published 0 errors, 1 warning, 0 info (new: 0 errors, 1 warning, 0 info)"),
        "{log}"
    );
    assert!(!log.contains("not reviewed"), "{log}");
    assert_eq!(
        last_line(&again),
        "--fail-on error: no published finding at or above error (exit 0)",
        "{log}"
    );
    // The same verdict under `warning` fails: it is the earlier review's, judged by this rule.
    let warning = run(&repo, &["examples/local.kdl", "--fail-on", "warning"]);
    assert_eq!(warning.code, 3, "{}", warning.transcript());
}

#[test]
fn a_rerun_on_a_reviewed_head_fails_what_failed() {
    let repo = Repo::local_example();
    repo.commit("src/merge.rs", CONFLICT, "a merge gone wrong");
    let first = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    assert_eq!(first.code, 3, "{}", first.transcript());
    let again = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    let log = again.transcript();
    assert!(log.contains("was already reviewed"), "{log}");
    assert_eq!(
        again.code, 3,
        "a job that failed on findings cannot pass by a re-run: {log}"
    );
    assert!(
        log.contains(") published 3 errors, 0 warnings, 0 info"),
        "{log}"
    );
    assert_eq!(
        last_line(&again),
        "--fail-on error: 3 published findings at or above error (exit 3)",
        "{log}"
    );
}

#[test]
fn a_rerun_on_a_head_whose_record_keeps_no_counts_is_not_reviewed() {
    let repo = Repo::local_example();
    let first = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    assert_eq!(first.code, 0, "{}", first.transcript());
    // A record written before counts were kept.
    let path = posted_record(&repo);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("record")).expect("json");
    record
        .as_object_mut()
        .expect("an object")
        .remove("published");
    std::fs::write(&path, serde_json::to_vec_pretty(&record).expect("json")).expect("write");
    let again = run(&repo, &["examples/local.kdl", "--fail-on", "error"]);
    let log = again.transcript();
    assert_eq!(again.code, 4, "{log}");
    assert_not_reviewed(&again);
    assert!(
        log.contains("not reviewed: `post` did not run: `gather` stopped the run, and the review last posted for this head keeps no counts (this run published no verdict"),
        "{log}"
    );
    assert!(log.contains("`--force` reviews the head again"), "{log}");
    assert_eq!(
        last_line(&again),
        "--fail-on error: not reviewed (exit 4)",
        "{log}"
    );
}

#[test]
fn a_failed_run_keeps_its_exit_status() {
    let pipeline = FELL_BACK_GATED
        .replace(" on-error=\"fallback\"", "")
        .replace(" when=\"review.commented\"", "");
    let repo = feature_repo(&pipeline);
    repo.commit_file("web/merge.rs", CONFLICT, "a change");
    let out = run(&repo, &["pipeline.kdl", "--fail-on", "error"]);
    let log = out.transcript();
    assert_eq!(out.code, 1, "{log}");
    assert_not_reviewed(&out);
    assert!(log.contains("--fail-on error: not reviewed"), "{log}");
    assert!(!log.contains("(exit 4)"), "{log}");
}

#[test]
fn a_pipeline_that_posts_nothing_is_not_reviewed_under_fail_on() {
    let repo =
        feature_repo("pipeline \"nothing\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n}\n");
    repo.commit_file("web/a.rs", "pub fn a() {}\n", "a change");
    let out = run(&repo, &["pipeline.kdl"]);
    let log = out.transcript();
    assert_eq!(out.code, 0, "{log}");
    assert!(
        !log.contains("not reviewed"),
        "nothing asked, nothing said: {log}"
    );
    let out = run(&repo, &["pipeline.kdl", "--fail-on", "error"]);
    let log = out.transcript();
    assert_eq!(out.code, 4, "{log}");
    assert!(
        log.contains("not reviewed: the pipeline has no `std/post` stage: nothing was published"),
        "{log}"
    );
}

/// The `published` output of the `post` stage of the newest run, as the run kept it.
fn published_of_last_run(repo: &Repo) -> serde_json::Value {
    let runs = repo.path().join(".reviewflow/runs");
    let mut dirs: Vec<_> = std::fs::read_dir(&runs)
        .expect("the runs folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    dirs.sort();
    let dir = dirs.last().expect("a run");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
            .expect("json");
    let post = manifest["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "post"))
        .expect("a post stage");
    let file = post["outputs"]["published"]["file"]
        .as_str()
        .expect("a kept `published`");
    serde_json::from_slice(&std::fs::read(dir.join(file)).expect("published")).expect("json")
}

#[test]
fn a_review_that_did_not_run_is_not_recorded_and_the_next_run_reviews_the_head() {
    // The local forge writes nothing for a review that did not run: no file says "no
    // findings", and the record does not name the head as reviewed, so the next run reviews it.
    let repo = feature_repo(&crate::support::with_allow_ids(FELL_BACK_POSTED));
    repo.commit_file("web/merge.rs", CONFLICT, "a change");
    let first = run(&repo, &["pipeline.kdl"]);
    let log = first.transcript();
    assert_eq!(first.code, 0, "{log}");
    assert!(
        log.contains("post: not reviewed, so no review written"),
        "{log}"
    );
    let written = forge_files(&repo);
    assert!(written.is_empty(), "{written:?}");
    let published = published_of_last_run(&repo);
    assert_eq!(published["reviewed"], false, "{published}");

    let again = run(&repo, &["pipeline.kdl"]);
    let log = again.transcript();
    assert_eq!(again.code, 0, "{log}");
    assert!(!log.contains("already reviewed"), "{log}");
}

#[test]
fn a_post_that_fails_a_review_that_did_not_run_fails_the_run_and_needs_no_allow() {
    // `check` counts on it: the fallen-back review is routed, so the file is clean.
    let repo = feature_repo(&fell_back_failed());
    let check = crate::support::command()
        .args(["check", "pipeline.kdl"])
        .current_dir(repo.path())
        .output()
        .expect("the binary runs");
    let said = String::from_utf8_lossy(&check.stderr).into_owned();
    assert_eq!(check.status.code(), Some(0), "{said}");
    assert!(said.contains("0 errors, 0 warnings"), "{said}");

    repo.commit_file("web/merge.rs", CONFLICT, "a change");
    // Without `--fail-on` too: the post's own failure fails the run.
    let out = run(&repo, &["pipeline.kdl"]);
    let log = out.transcript();
    assert_eq!(out.code, 1, "{log}");
    assert!(
        log.contains("published as not reviewed (`not-reviewed \"fail\"`): the review did not run: `review` fell back: no review after 2 tries"),
        "{log}"
    );
    assert!(!log.contains("no published finding"), "{log}");
    // Nothing written reads as a review: the local forge keeps no file of it.
    let written = forge_files(&repo);
    assert!(written.is_empty(), "{written:?}");
}
