//! The schemas in schema/ are what `reviewflow schema` writes: a test fails when they drift.

use crate::support::{reviewflow, root};

#[test]
fn schema_folder_matches_the_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().to_str().expect("utf-8 path");
    let run = reviewflow(&["schema", "--out", out]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let mut written: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert!(!written.is_empty());
    for name in &written {
        let fresh = std::fs::read_to_string(dir.path().join(name)).expect("fresh");
        let kept = std::fs::read_to_string(root().join("schema").join(name)).unwrap_or_default();
        assert!(
            fresh == kept,
            "schema/{name} is out of date: run `cargo run -- schema --out schema`"
        );
    }
    let mut kept: Vec<_> = std::fs::read_dir(root().join("schema"))
        .expect("schema/ exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".schema.json"))
        .collect();
    kept.sort();
    assert_eq!(
        kept, written,
        "schema/ holds exactly the schemas the code writes"
    );
}

#[test]
fn the_model_validates_against_its_schema() {
    let run = reviewflow(&["check", "--emit", "model", "examples/review.kdl"]);
    let model: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/model.schema.json")).expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&model)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");

    let findings = crate::support::findings_json("examples/broken/cycle.kdl");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/findings.schema.json")).expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&findings)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// `review.json` is described by `schema/review.schema.json`: a first review, and a second with
/// states and a resolved finding.
#[test]
fn review_json_validates_against_its_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/review.schema.json")).expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let repo = crate::support::Repo::local_example();
    repo.git(&["checkout", "-q", "-b", "topic"]);
    let review = |text: &str, message: &str| -> serde_json::Value {
        repo.commit("src/app.rs", text, message);
        let run = crate::support::reviewflow_in(repo.path(), &["run", "examples/local.kdl"]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        let path = repo
            .path()
            .join(".reviewflow/forge/branch-topic/local-review/review.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("review.json")).expect("json")
    };
    let first = review("// TODO: one\ndbg!(x);\n", "push 1");
    let second = review("// TODO: one\n// FIXME: two\n", "push 2");
    assert_eq!(
        second["resolved"].as_array().map(Vec::len),
        Some(1),
        "{second:#}"
    );
    for json in [&first, &second] {
        let errors: Vec<String> = validator.iter_errors(json).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}\n{json:#}");
    }
    // The schema is strict where the type is: an unknown field is refused.
    let mut extra = second.clone();
    extra["findings"][0]["extra"] = serde_json::json!(1);
    assert!(!validator.is_valid(&extra));
}
