//! `check --format sarif|github|gitlab`, suppressions, and one exit-code rule for every format.

use crate::support::{reviewflow, root};

const FLOW: &str = "tests/fixtures/pipelines/untrusted-title.kdl";
const ALLOWED: &str = "tests/fixtures/pipelines/untrusted-title-allowed.kdl";
/// A pipeline on GitLab's events with findings of each severity.
const GITLAB: &str = "tests/fixtures/pipelines/gitlab-findings.kdl";

fn sarif(args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["check", "--format", "sarif"];
    all.extend_from_slice(args);
    let run = reviewflow(&all);
    (
        run.code,
        serde_json::from_str(&run.stdout).expect("SARIF is JSON"),
    )
}

fn validate(log: &serde_json::Value) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("stdlib/tests/fixtures/sarif-2.1.0.json"))
            .expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn sarif_validates_and_carries_the_flow() {
    let (code, log) = sarif(&[FLOW]);
    assert_eq!(code, 1, "the same --fail-on rule as every format");
    validate(&log);
    let results = log["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 1);
    let r = &results[0];
    assert_eq!(r["ruleId"], "untrusted-input");
    let steps = r["codeFlows"][0]["threadFlows"][0]["locations"]
        .as_array()
        .expect("a flow");
    assert_eq!(steps.len(), 2, "source then sink: {steps:#?}");
    assert!(r["partialFingerprints"]["reviewflow/check/v2"].is_string());
}

#[test]
fn a_suppressed_finding_stays_in_sarif_with_its_reason() {
    let (code, log) = sarif(&[ALLOWED]);
    assert_eq!(code, 0, "an allowed finding does not fail the check");
    validate(&log);
    let r = &log["runs"][0]["results"][0];
    assert_eq!(r["suppressions"][0]["kind"], "inSource");
    assert_eq!(
        r["suppressions"][0]["justification"],
        "notify quotes its arguments and never runs them"
    );
    let (code, log) = sarif(&["--no-suppress", ALLOWED]);
    assert_eq!(code, 1, "--no-suppress shows it as live");
    assert!(log["runs"][0]["results"][0].get("suppressions").is_none());
}

#[test]
fn github_workflow_commands() {
    let run = reviewflow(&["check", "--format", "github", FLOW]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("github__untrusted_title", run.stdout);
    let allowed = reviewflow(&["check", "--format", "github", ALLOWED]);
    assert_eq!(allowed.code, 0);
    assert_eq!(allowed.stdout, "", "suppressed findings are not annotated");
}

#[test]
fn human_output_names_the_path_and_the_suppression() {
    let run = reviewflow(&["check", FLOW]);
    insta::assert_snapshot!("human__untrusted_title", run.stderr);
    let run = reviewflow(&["check", ALLOWED]);
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.contains("0 errors, 0 warnings (1 allowed)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_clean_pipeline_gives_an_empty_sarif_run() {
    let (code, log) = sarif(&["examples/review.kdl"]);
    assert_eq!(code, 0);
    validate(&log);
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
}

/// The fields of a GitLab Code Quality report's issues (GitLab's format: a JSON array).
fn assert_code_quality(report: &serde_json::Value) {
    let issues = report.as_array().expect("a JSON array");
    let mut fingerprints = std::collections::HashSet::new();
    for issue in issues {
        for field in ["description", "check_name", "fingerprint", "severity"] {
            assert!(issue[field].is_string(), "{field}: {issue:#}");
        }
        assert!(
            ["info", "minor", "major", "critical", "blocker"]
                .contains(&issue["severity"].as_str().unwrap_or_default()),
            "{issue:#}"
        );
        let path = issue["location"]["path"].as_str().expect("a path");
        assert!(!path.starts_with('/') && !path.contains('\\'), "{path}");
        assert!(
            issue["location"]["lines"]["begin"]
                .as_u64()
                .is_some_and(|l| l >= 1),
            "{issue:#}"
        );
        let fingerprint = issue["fingerprint"].as_str().unwrap_or_default().to_owned();
        assert!(fingerprints.insert(fingerprint), "unique: {issue:#}");
    }
}

#[test]
fn gitlab_code_quality_report() {
    let run = reviewflow(&["check", "--format", "gitlab", FLOW, GITLAB]);
    assert_eq!(run.code, 1, "the same --fail-on rule as every format");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_code_quality(&report);
    insta::assert_snapshot!("gitlab__code_quality", run.stdout);
    // Its fingerprint is the SARIF log's, numbered the same way.
    let (_, log) = sarif(&[FLOW]);
    assert_eq!(
        report[0]["fingerprint"],
        log["runs"][0]["results"][0]["partialFingerprints"]["reviewflow/check/v2"]
    );
    let allowed = reviewflow(&["check", "--format", "gitlab", ALLOWED]);
    assert_eq!(allowed.code, 0);
    assert_eq!(allowed.stdout, "[]\n", "allowed findings are left out");
    let clean = reviewflow(&["check", "--format", "gitlab", "examples/review.kdl"]);
    assert_eq!((clean.code, clean.stdout.as_str()), (0, "[]\n"));
}
