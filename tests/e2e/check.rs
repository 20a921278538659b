//! `reviewflow check` on the examples.

use crate::support::{findings_json, reviewflow, root};

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
