//! `reviewflow check` on the examples.

use crate::support::{findings_json, reviewflow, reviewflow_in, root};

#[test]
fn the_examples_check_clean() {
    for file in [
        "examples/review.kdl",
        "examples/local.kdl",
        "examples/runner-check.kdl",
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
    let text = std::fs::read_to_string(root().join(CASCADE)).expect("fixture")
        + "allow \"unknown-input\" reason=\"renamed in the next release\"\n";
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
    command "notify"
    secret-env "HOOK" "hook"
    output "out"
}}
stage "archive" uses="run" {{
    command "archive"
    secret-env "HOOK" "hook"
    output "out"
}}
stage "publish" uses="run" {{
    command "publish"
    secret-env "HOOK" "hook"
    output "out"
}}
stage "late" uses="run" {{
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

/// SARIF and workflow commands have no room for the model: the combination is a usage error.
#[test]
fn emit_model_is_refused_with_sarif_and_github() {
    for format in ["sarif", "github"] {
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
