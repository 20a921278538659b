//! `reviewflow check` on the examples.

use crate::support::{findings_json, reviewflow, reviewflow_in, root};

#[test]
fn the_examples_check_clean() {
    for file in [
        "examples/review.kdl",
        "examples/local.kdl",
        "examples/runner-check.kdl",
        "examples/self-review.kdl",
    ] {
        let run = reviewflow(&["check", "--fail-on", "warning", file]);
        assert_eq!(run.code, 0, "{file}:\n{}", run.transcript());
        let json = findings_json(file);
        assert_eq!(
            json["files"][0]["findings"],
            serde_json::json!([]),
            "{file}"
        );
    }
}

/// Every file in examples/broken fails with exactly one diagnostic, whose rendering is pinned.
#[test]
fn each_broken_example_has_exactly_one_diagnostic() {
    let mut files: Vec<_> = std::fs::read_dir(root().join("examples/broken"))
        .expect("examples/broken exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "at least 15 broken examples");
    let mut checks_seen = std::collections::BTreeSet::new();
    for path in files {
        let rel = path
            .strip_prefix(root())
            .expect("inside the repo")
            .display()
            .to_string();
        let name = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let json = findings_json(&rel);
        let findings = json["files"][0]["findings"]
            .as_array()
            .expect("findings")
            .clone();
        assert_eq!(findings.len(), 1, "{rel}: {findings:#?}");
        checks_seen.insert(findings[0]["check"].as_str().unwrap_or("").to_string());
        let run = reviewflow(&["check", "--fail-on", "warning", &rel]);
        assert_ne!(run.code, 0, "{rel} must fail");
        insta::assert_snapshot!(format!("broken__{name}"), run.transcript());
    }
    // Every structural check has a broken example.
    for id in [
        "syntax",
        "unknown-node",
        "unknown-property",
        "unknown-stage-kind",
        "unknown-reference",
        "unknown-input",
        "duplicate-name",
        "missing-required",
        "type-mismatch",
        "cycle",
        "unreachable-stage",
    ] {
        assert!(checks_seen.contains(id), "no broken example for {id}");
    }
}

#[test]
fn json_findings_have_one_based_positions() {
    let json = findings_json("examples/broken/unknown-reference-output.kdl");
    insta::assert_json_snapshot!("json__unknown_reference_output", json);
}

#[test]
fn every_problem_in_a_file_is_reported_in_one_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("many.kdl");
    std::fs::write(
        &file,
        r#"pipeline "many"
stage "gather" uses="std/gather" timout="5m"
stage "review" uses="std/reveiw"
stage "scan" uses="std/scan" {
    target "gather.dif"
    detcet "jwt"
}
store "s" {
    max-tries "10"
}
"#,
    )
    .expect("write");
    let run = reviewflow(&[
        "check",
        "--format",
        "json",
        file.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(run.code, 1);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let checks: Vec<&str> = json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["check"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        checks,
        [
            "unknown-property",
            "unknown-stage-kind",
            "unknown-reference",
            "unknown-node",
            "type-mismatch"
        ]
    );
}

#[test]
fn several_files_in_one_call() {
    let run = reviewflow(&["check", "examples/review.kdl", "examples/broken/cycle.kdl"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("examples/review.kdl: 0 errors, 0 warnings")
    );
    assert!(
        run.stderr
            .contains("examples/broken/cycle.kdl: 1 error, 0 warnings")
    );
}

#[test]
fn fail_on_decides_the_exit_code() {
    let file = "examples/broken/unreachable-stage.kdl";
    assert_eq!(
        reviewflow(&["check", file]).code,
        0,
        "a warning passes by default"
    );
    assert_eq!(reviewflow(&["check", "--fail-on", "warning", file]).code, 1);
    assert_eq!(
        reviewflow(&["check", "--fail-on", "never", "examples/broken/cycle.kdl"]).code,
        0
    );
    assert_eq!(
        reviewflow(&["check", "--format", "json", "--fail-on", "warning", file]).code,
        1,
        "the same rule for every format"
    );
}

#[test]
fn emit_model_prints_the_compiled_pipeline() {
    let run = reviewflow(&["check", "--emit", "model", "examples/local.kdl"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let model: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    insta::assert_json_snapshot!("model__local", model);
}

#[test]
fn an_unreadable_file_is_unusable_input() {
    let run = reviewflow(&["check", "does/not/exist.kdl"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("cannot read the file"),
        "{}",
        run.stderr
    );
}

const CASCADE: &str = "tests/fixtures/pipelines/unknown-input-cascade.kdl";

fn checks_of(json: &serde_json::Value) -> Vec<String> {
    json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["check"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A misspelt input is one finding per name, at its first use, and what other checks report
/// only because of it is folded into that finding; the same file spelt right is clean.
#[test]
fn an_unknown_input_is_reported_once_with_what_it_causes() {
    let json = findings_json(CASCADE);
    assert_eq!(
        checks_of(&json),
        ["unknown-input", "unknown-input"],
        "{json:#}"
    );
    let findings = &json["files"][0]["findings"];
    let projct = &findings[0];
    assert!(
        projct["message"]
            .as_str()
            .unwrap_or("")
            .contains("{projct}")
    );
    assert_eq!(projct["location"]["line"], 12, "at its first use");
    assert_eq!(projct["related"][0]["message"], "used again here");
    assert_eq!(projct["related"][0]["location"]["line"], 48);
    let chnage = &findings[1];
    assert!(
        chnage["message"]
            .as_str()
            .unwrap_or("")
            .contains("{chnage}")
    );
    for f in [projct, chnage] {
        assert!(
            f["help"]
                .as_str()
                .unwrap_or("")
                .contains("it also causes 1 `binding` finding, not reported separately"),
            "{f:#}"
        );
    }
    let run = reviewflow(&["check", CASCADE]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("human__unknown_input_cascade", run.stderr);

    let fixed = "tests/fixtures/pipelines/unknown-input-cascade-fixed.kdl";
    assert_eq!(checks_of(&findings_json(fixed)), Vec::<String>::new());
    assert_eq!(
        reviewflow(&["check", "--fail-on", "warning", fixed]).code,
        0
    );
}

/// Only what disappears once the name is put right is folded: `{xyz}` is close to no input, so
/// declaring it is the fix, and a binding that still would not name the change is its own
/// finding.
#[test]
fn a_finding_that_does_not_follow_from_the_name_stays() {
    let text = std::fs::read_to_string(root().join(CASCADE))
        .expect("fixture")
        .replace("{projct}", "{project}")
        .replace("{chnage}", "{xyz}");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("xyz.kdl");
    std::fs::write(&file, text).expect("write");
    let json = findings_json(file.to_str().expect("utf-8 path"));
    let checks = checks_of(&json);
    assert_eq!(checks, ["binding", "unknown-input", "binding"], "{json:#}");
    let unknown = &json["files"][0]["findings"][1];
    assert!(
        !unknown["help"]
            .as_str()
            .unwrap_or("")
            .contains("also causes"),
        "{unknown:#}"
    );
}

/// An allowed `unknown-input` does not fail the check, so it cannot stand for anything: what it
/// would fold stays live.
#[test]
fn an_allowed_unknown_input_folds_nothing() {
    let text = crate::support::with_allow_ids(
        &(std::fs::read_to_string(root().join(CASCADE)).expect("fixture")
            + "allow \"unknown-input\" reason=\"renamed in the next release\"\n"),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("allowed.kdl");
    std::fs::write(&file, text).expect("write");
    let path = file.to_str().expect("utf-8 path");
    let checks = checks_of(&findings_json(path));
    assert_eq!(
        checks,
        ["unknown-input", "binding", "unknown-input", "binding"],
        "the consequences are reported"
    );
    assert_eq!(reviewflow(&["check", path]).code, 1, "and fail the check");
}

/// A label over a long multi-line node is drawn on its first line, saying which lines it covers,
/// and labels far apart are parts of one excerpt joined by `...`: never the lines between.
#[test]
fn excerpts_show_the_labelled_lines_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("long.kdl");
    let filler: String = (1..=20).map(|i| format!("// filler line {i}\n")).collect();
    std::fs::write(
        &file,
        format!(
            r#"pipeline "long"
secret "hook" env="HOOK" {{
    visible-to "gather" \
        "notify" \
        "archive" \
        "publish"
}}
stage "gather" uses="std/gather"
{filler}stage "notify" uses="run" {{
    cwd "{{work}}"
    command "notify"
    secret-env "HOOK" "hook"
    output "out"
}}
stage "archive" uses="run" {{
    cwd "{{work}}"
    command "archive"
    secret-env "HOOK" "hook"
    output "out"
}}
stage "publish" uses="run" {{
    cwd "{{work}}"
    command "publish"
    secret-env "HOOK" "hook"
    output "out"
}}
stage "late" uses="run" {{
    cwd "{{work}}"
    command "late"
    secret-env "HOOK" "hook"
    output "out"
}}
"#
        ),
    )
    .expect("write");
    let run = reviewflow_in(dir.path(), &["check", "long.kdl"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(!run.stderr.contains("filler line 9"), "{}", run.stderr);
    insta::assert_snapshot!("human__bounded_excerpts", run.stderr);
}

/// `--format json --emit model` prints one document: the findings, with each file's model.
#[test]
fn json_with_emit_model_is_one_document() {
    let alone = reviewflow(&["check", "--emit", "model", "examples/local.kdl"]);
    let model: serde_json::Value = serde_json::from_str(&alone.stdout).expect("json");
    let run = reviewflow(&[
        "check",
        "--format",
        "json",
        "--emit",
        "model",
        "examples/local.kdl",
        "examples/broken/syntax-stray-brace.kdl",
    ]);
    assert_eq!(run.code, 2, "the unusable file decides");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!(doc["files"][0]["path"], "examples/local.kdl");
    assert_eq!(doc["files"][0]["model"], model);
    assert_eq!(doc["files"][1]["unusable"], true);
    assert!(
        doc["files"][1].get("model").is_none(),
        "no model of an unusable file"
    );
    assert_eq!(run.stderr, "");
}

/// SARIF, workflow commands and a Code Quality report have no room for the model: the
/// combination is a usage error.
#[test]
fn emit_model_is_refused_with_sarif_github_and_gitlab() {
    for format in ["sarif", "github", "gitlab"] {
        let run = reviewflow(&[
            "check",
            "--format",
            format,
            "--emit",
            "model",
            "examples/local.kdl",
        ]);
        assert_eq!(run.code, 2, "{}", run.transcript());
        assert_eq!(run.stdout, "");
        insta::assert_snapshot!(format!("emit_model_with_{format}"), run.stderr);
    }
}

/// `std/run` suggests `run` and `std/Review` exactly `std/review`, not three look-alikes.
#[test]
fn a_stage_kind_near_miss_suggests_the_one_kind() {
    let run = reviewflow(&["check", "tests/fixtures/pipelines/did-you-mean-kind.kdl"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("help: did you mean `run`?"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("help: did you mean `std/review`?"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("did_you_mean_kind", run.transcript());
}

/// A stage with one output says "its only output is"; a name is refused for not starting with an
/// ASCII letter, not "a letter" (`é` is one).
#[test]
fn the_only_output_and_an_ascii_name_are_worded_as_such() {
    let run = reviewflow(&[
        "check",
        "tests/fixtures/pipelines/only-output-and-ascii-name.kdl",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("its only output is `ok`"),
        "{}",
        run.stderr
    );
    let json = findings_json("tests/fixtures/pipelines/only-output-and-ascii-name.kdl");
    let messages = json["files"][0]["findings"].to_string();
    assert!(
        messages.contains("starting with an ASCII letter"),
        "{messages}"
    );
    insta::assert_snapshot!("only_output_and_ascii_name", run.transcript());
}

const CLEAN: &str = "pipeline \"clean\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n}\n";

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// With no argument, `check` checks the repository's `review.kdl` and every `.kdl` file under
/// `.github/reviewflow/` (recursively, sorted by path), and nothing else.
#[test]
fn check_without_arguments_finds_the_pipelines() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("review.kdl"), CLEAN);
    // One deployment's pipelines, so each has a name of its own (`check::folder`).
    write(
        &dir.path().join(".github/reviewflow/nightly.kdl"),
        &CLEAN.replace("\"clean\"", "\"nightly\""),
    );
    write(
        &dir.path().join(".github/reviewflow/a/weekly.kdl"),
        &CLEAN.replace("\"clean\"", "\"weekly\""),
    );
    write(
        &dir.path().join(".github/reviewflow/README.md"),
        "not a pipeline",
    );
    write(&dir.path().join("other.kdl"), "not checked {");
    let run = reviewflow_in(dir.path(), &["check"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    insta::assert_snapshot!("no_argument__found", run.transcript());
}

#[test]
fn check_without_arguments_and_no_pipeline_is_unusable_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("other.kdl"), CLEAN);
    let run = reviewflow_in(dir.path(), &["check"]);
    assert_eq!(run.code, 2);
    insta::assert_snapshot!("no_argument__nothing_found", run.transcript());
}

/// A folder is checked recursively, its files in path order, and the exit code is the worst.
#[test]
fn a_folder_argument_checks_every_kdl_file_in_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cycle = std::fs::read_to_string(root().join("examples/broken/cycle.kdl")).expect("read");
    write(&dir.path().join("p/z.kdl"), CLEAN);
    write(&dir.path().join("p/b/cycle.kdl"), &cycle);
    write(
        &dir.path().join("p/a.kdl"),
        &CLEAN.replace("\"clean\"", "\"clean-a\""),
    );
    write(&dir.path().join("p/notes.txt"), "not a pipeline");
    let run = reviewflow_in(dir.path(), &["check", "p"]);
    assert_eq!(run.code, 1, "a finding in one file decides");
    insta::assert_snapshot!("folder__recursive", run.transcript());

    let run = reviewflow_in(dir.path(), &["check", "--format", "json", "p"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let paths: Vec<&str> = doc["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(paths, ["p/a.kdl", "p/b/cycle.kdl", "p/z.kdl"]);

    write(&dir.path().join("p/b/stray.kdl"), "pipeline \"x\" }\n");
    assert_eq!(
        reviewflow_in(dir.path(), &["check", "p"]).code,
        2,
        "an unusable file is the worst"
    );
}

#[test]
fn a_folder_without_pipelines_is_unusable_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("empty/notes.txt"), "not a pipeline");
    let run = reviewflow_in(dir.path(), &["check", "empty"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("empty: no `.kdl` file in this folder (nor below it)"),
        "{}",
        run.stderr
    );
}

/// No symbolic link below a checked folder is followed, wherever it points (out of the folder or
/// into it): a linked folder is not entered, a linked file not checked, and each is counted in
/// one warning, never skipped silently.
#[cfg(unix)]
#[test]
fn a_folder_never_follows_links_and_says_what_it_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("outside/evil.kdl"), "pipeline \"x\" }\n");
    write(&dir.path().join("p/a.kdl"), CLEAN);
    let link = std::os::unix::fs::symlink;
    link(dir.path().join("outside"), dir.path().join("p/linked-dir")).expect("symlink");
    link(
        dir.path().join("outside/evil.kdl"),
        dir.path().join("p/linked-out.kdl"),
    )
    .expect("symlink");
    link(
        dir.path().join("p/a.kdl"),
        dir.path().join("p/linked-in.kdl"),
    )
    .expect("symlink");
    let run = reviewflow_in(dir.path(), &["check", "--format", "json", "p"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let paths: Vec<&str> = doc["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(paths, ["p/a.kdl"]);
    assert!(
        run.stderr.contains(
            "warning: 3 entries below the folders checked were skipped, neither a regular file \
             nor a folder (a symbolic link is never followed): p/linked-dir (a symbolic link), \
             p/linked-in.kdl (a symbolic link), p/linked-out.kdl (a symbolic link)\n"
        ),
        "{}",
        run.stderr
    );
}

/// A FIFO, a link loop and a dangling link in a checked folder: skipped (the FIFO never waited
/// on), counted and named in one warning; past a few, the rest are counted.
#[cfg(unix)]
#[test]
fn a_fifo_a_link_loop_and_a_dangling_link_in_a_folder_are_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("p/a.kdl"), CLEAN);
    let p = dir.path().join("p");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p.join("b-fifo.kdl"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let link = std::os::unix::fs::symlink;
    link(p.join("c-loop.kdl"), p.join("c-loop.kdl")).expect("symlink");
    link(p.join("missing"), p.join("d-dangling.kdl")).expect("symlink");
    for i in 0..10 {
        link(p.join("missing"), p.join(format!("e{i}.kdl"))).expect("symlink");
    }
    for format in ["human", "json", "sarif", "github"] {
        let run = reviewflow_in(dir.path(), &["check", "--format", format, "p"]);
        assert_eq!(run.code, 0, "{format}: {}", run.transcript());
        let warning: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .collect();
        assert_eq!(
            warning,
            [
                "warning: 13 entries below the folders checked were skipped, neither a regular \
              file nor a folder (a symbolic link is never followed): p/b-fifo.kdl (a FIFO, \
              socket or device), p/c-loop.kdl (a symbolic link), p/d-dangling.kdl (a symbolic \
              link), p/e0.kdl (a symbolic link), p/e1.kdl (a symbolic link), and 8 more"
            ],
            "{format}: {}",
            run.stderr
        );
    }
}

/// Many files are checked in parallel; the output is the same, in path order, on every run, and
/// the same as naming the files one by one in that order.
#[test]
fn many_files_give_the_same_output_in_path_order() {
    let folder = reviewflow(&[
        "check",
        "--format",
        "json",
        "--fail-on",
        "never",
        "examples/broken",
    ]);
    assert_eq!(folder.code, 2, "examples/broken has unusable files");
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples/broken"))
        .expect("examples/broken")
        .map(|e| {
            format!(
                "examples/broken/{}",
                e.expect("entry").file_name().to_string_lossy()
            )
        })
        .filter(|p| p.ends_with(".kdl"))
        .collect();
    files.sort();
    let mut args = vec!["check", "--format", "json", "--fail-on", "never"];
    args.extend(files.iter().map(String::as_str));
    let named = reviewflow(&args);
    assert_eq!(folder.stdout, named.stdout);
    for _ in 0..3 {
        let again = reviewflow(&[
            "check",
            "--format",
            "json",
            "--fail-on",
            "never",
            "examples/broken",
        ]);
        assert_eq!(again.stdout, folder.stdout);
        assert_eq!(again.code, folder.code);
    }
    let human = reviewflow(&["check", "examples/broken"]);
    let human_named = reviewflow(
        &[
            &["check"][..],
            &files.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    assert_eq!(human.stderr, human_named.stderr);
}

/// One misspelt secret name is one error, whatever else it breaks: the secret's scope then
/// names stages that "never use it", and each use is unknown. Those follow from the one name
/// and are folded into the error about its first use, which counts them.
#[test]
fn a_misspelt_secret_is_one_error() {
    let run = reviewflow(&[
        "check",
        "tests/fixtures/pipelines/misspelt-secret.kdl",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let findings: Vec<&serde_json::Value> = json["files"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0]["check"], "unknown-reference");
    assert!(
        findings[0]["help"]
            .as_str()
            .is_some_and(|h| h.contains("`secret-scope` findings")),
        "{findings:#?}"
    );
}

/// (check, stage) of the live findings of `text`, written to a temp file.
fn live_checks(text: &str) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("p.kdl");
    std::fs::write(&path, text).expect("written");
    let json = findings_json(path.to_str().expect("utf-8"));
    json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["suppressed"].is_null())
        .map(|f| {
            (
                f["check"].as_str().unwrap_or("").to_string(),
                f["stage"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

const LINKED_ISSUE: &str = r#"pipeline "p"
forge "github" token="t"
secret "t" env="GITHUB_TOKEN" can="CAN" {
    visible-to "gather" "linked" "post"
}
stage "gather" uses="std/gather"
stage "linked" uses="run" {
    command "/usr/local/bin/check-linked-issue"
    stdin "{gather.body}"
    secret-env "GH_TOKEN" "t"
    output "comment" type="text"
}
stage "post" uses="std/post" permissions="pull-requests:write" {
    comment "linked.comment"
    require-head "gather.head"
}
"#;

/// Principle 2: a `can=` that a stage writing with the token contradicts is not believed: the
/// contradiction is reported, and a program that reads the change while holding the token is
/// taken to hold a token that writes.
#[test]
fn a_read_only_claim_the_publisher_contradicts_is_not_believed() {
    let pair = |c: &str, s: &str| (c.to_string(), s.to_string());
    let contradicted = live_checks(&LINKED_ISSUE.replace("CAN", "pull-requests:read"));
    assert!(
        contradicted.contains(&pair("permissions", "post")),
        "{contradicted:?}"
    );
    assert!(
        contradicted.contains(&pair("write-token-injection", "linked")),
        "{contradicted:?}"
    );
    // Declared as it is used: the program holds a token that writes, reported for what it is.
    let honest = live_checks(&LINKED_ISSUE.replace("CAN", "pull-requests:write"));
    assert!(
        !honest.iter().any(|(c, _)| c == "permissions"),
        "{honest:?}"
    );
    assert!(
        honest.contains(&pair("write-token-injection", "linked")),
        "{honest:?}"
    );
}

/// A stage with network is a way out for every private value it reads (principle 5): a reviewer
/// with TCP 443 that resumes the restored conversation can send it anywhere. Not a twin: the
/// same reviewer reads untrusted data with network, which `shared-network` shows too.
#[test]
fn a_reviewer_with_network_is_a_way_out_for_the_conversation_it_resumes() {
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/pipelines/reviewer-with-network.kdl"))
            .expect("the fixture");
    let with = live_checks(&text);
    assert!(
        with.contains(&("private-egress".to_string(), "review".to_string())),
        "{with:?}"
    );
    let without = live_checks(&text.replace(" network=\"443\"", ""));
    assert!(
        !without
            .iter()
            .any(|(c, _)| c == "private-egress" || c == "shared-network"),
        "{without:?}"
    );
}

/// Principle 2: what GitHub's runner sets from what the change's author wrote (the head branch's
/// name in `GITHUB_HEAD_REF`) is not the pipeline's to vouch for. The `trusted "input"` lifts
/// nothing and says why, and the finding it would have hidden is shown live.
#[test]
fn a_trusted_input_the_forge_says_the_author_wrote_lifts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("p.kdl");
    std::fs::write(
        &file,
        "pipeline \"preview\"\ntrigger \"pull_request_target\" branches=\"main\"\n\
         forge \"github\" token=\"github-token\"\n\
         input \"branch\" env=\"GITHUB_HEAD_REF\"\n\
         trusted \"input\" name=\"branch\" reason=\"set by GitHub, not by a user\"\n\
         secret \"github-token\" env=\"GITHUB_TOKEN\" {\n    visible-to \"gather\"\n}\n\
         secret \"preview-token\" env=\"PREVIEW_TOKEN\" can=\"\" {\n    visible-to \"preview\"\n}\n\
         stage \"gather\" uses=\"std/gather\"\n\
         stage \"preview\" uses=\"run\" {\n    cwd \"{work}\"\n    \
         command \"deploy-preview\" \"--alias\" \"{branch}\"\n    \
         secret-env \"PREVIEW_TOKEN\" \"preview-token\"\n}\n",
    )
    .expect("write");
    let json = crate::support::findings_json(file.to_str().expect("utf-8"));
    let live: Vec<(String, String)> = json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["suppressed"].is_null())
        .map(|f| {
            (
                f["check"].as_str().unwrap_or_default().to_owned(),
                f["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        live.iter().any(|(c, m)| c == "suppression"
            && m.contains("`$GITHUB_HEAD_REF` is set by the `github` forge's runner")),
        "{live:#?}"
    );
    assert!(
        live.iter()
            .any(|(c, m)| c == "untrusted-input" && m.contains("untrusted `{branch}`")),
        "{live:#?}"
    );
}

/// A stage that holds a token and works in a folder a networked stage fetched (the pull
/// request's head): certain, so an error at the working folder, not the medium-confidence
/// "program in the checkout" warning; the twin, which builds it in a stage holding nothing, is
/// not reported.
#[test]
fn a_working_folder_a_networked_stage_fetched_is_untrusted() {
    let live = |name: &str| -> Vec<(String, String, String)> {
        let path = root().join("tests/fixtures/pipelines").join(name);
        let json = crate::support::findings_json(path.to_str().expect("utf-8"));
        json["files"][0]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["suppressed"].is_null() && f["severity"] != "info")
            .map(|f| {
                (
                    f["check"].as_str().unwrap_or_default().to_owned(),
                    f["severity"].as_str().unwrap_or_default().to_owned(),
                    f["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let bad = live("fetched-head-built-with-a-token.kdl");
    assert_eq!(bad.len(), 1, "{bad:#?}");
    let (check, severity, message) = &bad[0];
    assert_eq!(
        (check.as_str(), severity.as_str()),
        ("untrusted-input", "error")
    );
    assert!(
        message.contains("untrusted `fetch-head.tree` reaches a path of `coverage`"),
        "{message}"
    );
    let good = live("fetched-head-built-by-a-stage-without-the-token.kdl");
    assert!(good.is_empty(), "{good:#?}");
}

/// A forge that writes with a token other than the job's (an App's, a machine user's) while it
/// believes only the job token's account never finds its own comment again: the two shapes are
/// reported by `fail-closed`, and their twins, which name the token's account, are not. (The
/// fixtures also carry `shared-job`'s warning: an App token writes in every job it is given to.)
#[test]
fn a_forge_that_writes_as_an_account_it_does_not_believe_is_reported() {
    let live = |name: &str| -> Vec<(String, String)> {
        live_by_file(&root().join("tests/fixtures/pipelines").join(name))
            .into_iter()
            .filter(|(_, check, _)| check != "shared-job")
            .map(|(_, check, message)| (check, message))
            .collect()
    };
    for (bad, env) in [
        (
            "bad-app-token-with-the-default-comment-authors.kdl",
            "QUEST_REVIEW_APP_TOKEN",
        ),
        (
            "bad-app-token-believing-the-job-account.kdl",
            "REVIEW_BOT_PAT",
        ),
    ] {
        let found = live(bad);
        assert_eq!(found.len(), 1, "{bad}: {found:#?}");
        let (check, message) = &found[0];
        assert_eq!(check, "fail-closed", "{bad}");
        assert!(
            message.contains(&format!("the forge writes with the token in `{env}`"))
                && message.contains("believes only `github-actions[bot]`"),
            "{bad}: {message}"
        );
        let good = live(&bad.replacen("bad-", "good-", 1));
        assert!(good.is_empty(), "{bad}'s twin: {good:#?}");
    }
}

/// The live findings of each file `check --format json <path>` reports: (file, check, message).
fn live_by_file(path: &std::path::Path) -> Vec<(String, String, String)> {
    let json = crate::support::findings_json(path.to_str().expect("utf-8"));
    let mut out = Vec::new();
    for file in json["files"].as_array().expect("files") {
        let name = file["path"].as_str().unwrap_or_default().to_owned();
        for f in file["findings"].as_array().expect("findings") {
            if f["suppressed"].is_null() && f["severity"] != "info" {
                out.push((
                    name.clone(),
                    f["check"].as_str().unwrap_or_default().to_owned(),
                    f["message"].as_str().unwrap_or_default().to_owned(),
                ));
            }
        }
    }
    out
}

/// What no one file shows: two pipelines of a folder under one name replace each other's
/// reviews, and one's sealing key held by the other's program opens its conversations. Each is
/// reported once, in the later file, when the folder is checked; each file alone is clean, and
/// so is the secure twin of each folder.
#[test]
fn a_folder_is_judged_as_a_whole() {
    let folders = root().join("tests/fixtures/folders");
    for (case, later, check, words) in [
        (
            "same-name",
            "self-review.kdl",
            "duplicate-publisher",
            "is also",
        ),
        (
            "shared-key",
            "weekly-digest.kdl",
            "secret-scope",
            "runs a program holding `REVIEW_CONVERSATION_KEY`, which",
        ),
    ] {
        let bad = folders.join(case).join("bad");
        let found = live_by_file(&bad);
        assert_eq!(found.len(), 1, "{case}: {found:#?}");
        let (file, id, message) = &found[0];
        assert!(file.ends_with(later), "{case}: reported in {file}");
        assert_eq!(id, check, "{case}");
        assert!(message.contains(words), "{case}: {message}");
        for alone in ["local.kdl", later] {
            let single = live_by_file(&bad.join(alone));
            assert!(single.is_empty(), "{case}/{alone} alone: {single:#?}");
        }
        let good = live_by_file(&folders.join(case).join("good"));
        assert!(good.is_empty(), "{case}'s twin: {good:#?}");
        // The exit code follows: the folder fails, its twin passes.
        let failed = reviewflow(&["check", bad.to_str().expect("utf-8")]);
        assert_eq!(failed.code, 1, "{case}: {}", failed.stderr);
    }
}

/// What the change's author writes is not the pipeline's to vouch for: an input read from the
/// branch name or from the event's payload file (`GITHUB_EVENT_PATH`: the pull request's title
/// and body) stays untrusted under a `trusted "input"`, which is reported as lifting nothing.
#[test]
fn no_declaration_vouches_for_what_the_changes_author_writes() {
    for (var, pattern) in [
        ("GITHUB_EVENT_PATH", ""),
        ("GITHUB_HEAD_REF", " pattern=\"^[a-z0-9][a-z0-9-]{0,63}$\""),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("review.kdl");
        std::fs::write(
            &path,
            format!(
                r#"pipeline "labels"
forge "github" token="github-token"
trigger "pull_request_target" branches="main"
input "given" env="{var}"{pattern}
trusted "input" name="given" reason="the runner sets it"
secret "github-token" env="GITHUB_TOKEN" {{
    visible-to "label"
}}
stage "label" uses="run" permissions="pull-requests:write" {{
    cwd "{{work}}"
    command "label-from" "{{given}}"
    secret-env "GH_TOKEN" "github-token"
}}
"#
            ),
        )
        .expect("write");
        let json = crate::support::findings_json(path.to_str().expect("utf-8"));
        let findings: Vec<(String, bool, String)> = json["files"][0]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| {
                (
                    f["check"].as_str().unwrap_or_default().to_owned(),
                    f.get("suppressed").is_some_and(|s| !s.is_null()),
                    f["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        assert!(
            findings
                .iter()
                .any(|(c, s, _)| c == "untrusted-input" && !s),
            "{var}: the flow stays live: {findings:#?}"
        );
        assert!(
            findings.iter().any(|(c, _, m)| c == "suppression"
                && m.contains("lifts nothing")
                && m.contains(var)),
            "{var}: {findings:#?}"
        );
    }
}
