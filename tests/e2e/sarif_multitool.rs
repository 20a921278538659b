//! Both SARIF outputs (`check --format sarif` and the local forge's `review.sarif`) pass
//! Microsoft's SARIF Multitool, GitHub's ingestion rules included (`docs/sarif.md#validation`).
//!
//! The Multitool is found through `REVIEWFLOW_SARIF_MULTITOOL` (the `Sarif.Multitool` binary),
//! else in the cache `.ci/run` installs it to. Without it the test fails under `CI=true` and is
//! skipped with a note otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Repo, reviewflow_in, root};

/// The variable naming the `Sarif.Multitool` binary.
const TOOL_VAR: &str = "REVIEWFLOW_SARIF_MULTITOOL";

/// Where `.ci/run` installs it, under `$HOME`.
const CACHED: &str = ".cache/reviewflow-ci/sarif-multitool/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool";

/// The two rules turned off, and why (`docs/sarif.md#validation`): SARIF2005 asks for an
/// `informationUri`, which only a build with `REVIEWFLOW_DOCS_URL` has; SARIF2006 fetches every
/// URI over the network, and tests never touch the network.
const CONFIG: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<Properties>
  <Properties Key="SARIF2005.ProvideToolProperties.Options">
    <Property Key="RuleEnabled" Value="Disabled" Type="Driver.RuleEnabledState" />
  </Properties>
  <Properties Key="SARIF2006.UrisShouldBeReachable.Options">
    <Property Key="RuleEnabled" Value="Disabled" Type="Driver.RuleEnabledState" />
  </Properties>
</Properties>
"#;

/// The Multitool, or `None` (after failing under CI, or printing why the test is skipped).
fn multitool() -> Option<PathBuf> {
    let named = std::env::var_os(TOOL_VAR).map(PathBuf::from);
    let cached = std::env::var_os("HOME").map(|home| Path::new(&home).join(CACHED));
    let found = named.clone().or(cached).filter(|p| p.is_file());
    if found.is_none() {
        let why = match named {
            Some(p) => format!("{TOOL_VAR}={} is not a file", p.display()),
            None => format!("{TOOL_VAR} is unset and ~/{CACHED} is absent"),
        };
        crate::support::skipped(&format!(
            "SARIF Multitool test: {why}; install it with `npm install --prefix \
             ~/.cache/reviewflow-ci/sarif-multitool @microsoft/sarif-multitool` (`.ci/run` does)"
        ));
    }
    found
}

/// The Multitool's errors and warnings on `log` (GitHub's rules and SARIF's), one line each.
fn problems(tool: &Path, name: &str, log: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join(name);
    let output = dir.path().join("validation.sarif");
    let config = dir.path().join("config.xml");
    std::fs::write(&input, log).expect("write the log");
    std::fs::write(&config, CONFIG).expect("write the config");
    let run = Command::new(tool)
        .arg("validate")
        .args(["--rule-kind", "Gh;Sarif"])
        .arg("--config")
        .arg(&config)
        .arg("--output")
        .arg(&output)
        .arg(&input)
        .current_dir(dir.path())
        // A self-contained .NET program: no ICU needed, nothing sent anywhere.
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .output()
        .expect("the Multitool runs");
    let console = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "the Multitool failed:\n{console}");
    let text = std::fs::read_to_string(&output)
        .unwrap_or_else(|e| panic!("no validation log ({e}):\n{console}"));
    let report: Value = serde_json::from_str(&text).expect("the validation log is JSON");
    let results = report["runs"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    results
        .iter()
        // A result without a level is a warning (SARIF's default); notes are advice.
        .filter(|r| !matches!(r["level"].as_str(), Some("note" | "none")))
        .map(|r| {
            format!(
                "{} {}: {}",
                r["ruleId"].as_str().unwrap_or("?"),
                r["level"].as_str().unwrap_or("warning"),
                r["message"]["arguments"]
            )
        })
        .collect()
}

/// `log` is valid against the SARIF 2.1.0 schema (checked with or without the Multitool).
fn assert_schema_valid(log: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("stdlib/tests/fixtures/sarif-2.1.0.json"))
            .expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

fn results(log: &Value) -> &Vec<Value> {
    log["runs"][0]["results"].as_array().expect("results")
}

/// Every fingerprint of the log, as `key=value`.
fn fingerprints(log: &Value) -> Vec<String> {
    results(log)
        .iter()
        .flat_map(|r| {
            r["partialFingerprints"]
                .as_object()
                .expect("partialFingerprints")
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn assert_unique(prints: &[String]) {
    let mut sorted = prints.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        prints.len(),
        "a fingerprint repeats: {prints:#?}"
    );
}

/// Every `artifactLocation.uri` anywhere in the log.
fn uris(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(uri)) = map.get("artifactLocation").and_then(|a| a.get("uri"))
            {
                out.push(uri.clone());
            }
            if let Some(Value::String(uri)) = map.get("location").and_then(|a| a.get("uri")) {
                out.push(uri.clone());
            }
            map.values().for_each(|v| uris(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| uris(v, out)),
        _ => {}
    }
}

/// A pipeline with three identical findings (three `unknown-node`s, same text, no stage).
const THREE_ALIKE: &str = "pipeline \"dups\"\nbogus\nbogus\nbogus\n";

#[test]
fn check_sarif_passes_the_multitool() {
    let outside = tempfile::tempdir().expect("tempdir");
    let absolute = outside.path().join("named-by-absolute-path.kdl");
    std::fs::copy(
        root().join("tests/fixtures/pipelines/untrusted-title.kdl"),
        &absolute,
    )
    .expect("copy");
    let alike = outside.path().join("three-alike.kdl");
    std::fs::write(&alike, THREE_ALIKE).expect("write");
    let run = reviewflow_in(
        &root(),
        &[
            "check",
            "--format",
            "sarif",
            "--fail-on",
            "never",
            absolute.to_str().expect("utf-8 temp path"),
            alike.to_str().expect("utf-8 temp path"),
            "examples/review.kdl",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let log: Value = serde_json::from_str(&run.stdout).expect("SARIF is JSON");

    let mut all = Vec::new();
    uris(&log, &mut all);
    assert!(!all.is_empty());
    for uri in &all {
        assert!(!uri.starts_with('/') && !uri.contains("://"), "{uri}");
    }
    assert!(all.contains(&"examples/review.kdl".to_string()), "{all:?}");
    let prints = fingerprints(&log);
    assert_unique(&prints);
    let alike_results = results(&log)
        .iter()
        .filter(|r| r["ruleId"] == "unknown-node")
        .count();
    assert_eq!(alike_results, 3, "three findings, three results");
    assert_eq!(
        log["runs"][0]["automationDetails"]["id"],
        "reviewflow/check/"
    );
    assert_schema_valid(&log);

    // From a subfolder, a relative name is still relative to the repository's top (when the
    // sources are a repository: an unpacked archive has no top but the current folder).
    let sub = reviewflow_in(
        &root().join("examples"),
        &["check", "--format", "sarif", "review.kdl"],
    );
    let sub: Value = serde_json::from_str(&sub.stdout).expect("SARIF is JSON");
    if root().join(".git").exists() {
        assert_eq!(
            sub["runs"][0]["artifacts"][0]["location"]["uri"],
            "examples/review.kdl"
        );
    }

    let Some(tool) = multitool() else { return };
    let problems = problems(&tool, "check.sarif", &run.stdout);
    assert!(problems.is_empty(), "{problems:#?}\n{}", run.stdout);
}

#[test]
fn review_sarif_passes_the_multitool() {
    let repo = Repo::local_example();
    // Three identical conflict markers in one file, a debugging leftover, and a finding about
    // a whole file (a binary one).
    // (one commit: a push is reviewed as its last commit on `main`).
    let write = |file: &str, text: &str| {
        let path = repo.path().join(file);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "src/merge.rs",
        "fn a() {}\n<<<<<<< HEAD\nx\n<<<<<<< HEAD\ny\n<<<<<<< HEAD\n",
    );
    // Trailing whitespace too: its finding carries a suggested fix (a SARIF `fixes`).
    write("src/debug.js", "console.log('here');  \n");
    repo.commit("assets/blob.bin", "\0\u{1}\u{2}binary\0", "push 1");
    let sarif = repo
        .path()
        .join(".reviewflow/forge/branch-main/local-review/review.sarif");
    let run = |what: &str| -> (Value, String) {
        let out = reviewflow_in(repo.path(), &["run", "examples/local.kdl"]);
        assert_eq!(out.code, 0, "{what}: {}", out.transcript());
        let text = std::fs::read_to_string(&sarif).expect("review.sarif");
        (serde_json::from_str(&text).expect("SARIF is JSON"), text)
    };
    let (first, first_text) = run("first push");
    // review.rdjsonl carries the same fix as reviewdog reads one: whole lines, no columns.
    let rdjsonl = std::fs::read_to_string(sarif.with_file_name("review.rdjsonl")).expect("rdjsonl");
    // Every line is a diagnostic as reviewdog's own schema describes one.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/reviewdog/Diagnostic.json"))
            .expect("reviewdog's schema"),
    )
    .expect("JSON");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    for line in rdjsonl.lines() {
        let diagnostic: Value = serde_json::from_str(line).expect("a diagnostic");
        let errors: Vec<String> = validator
            .iter_errors(&diagnostic)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
    }
    let fix = rdjsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a diagnostic"))
        .find(|d| d["code"]["value"] == "trailing-whitespace")
        .expect("the trailing whitespace's diagnostic");
    assert_eq!(
        fix["suggestions"],
        serde_json::json!([{
            "range": { "start": { "line": 1 }, "end": { "line": 1 } },
            "text": "console.log('here');"
        }]),
        "{fix:#}"
    );
    // A second push fixes the debugging leftover and adds a TODO: with a baseline, the log has
    // states and a resolved finding.
    write("src/debug.js", "// fine\n");
    repo.commit("src/todo.rs", "// TODO: later\n", "push 2");
    let (second, second_text) = run("second push");

    // Each push is reviewed as its own commit: the second's review resolves the first's
    // markers, which are then no results.
    for (log, expected_markers) in [(&first, 3), (&second, 0)] {
        assert_schema_valid(log);
        let prints = fingerprints(log);
        assert_unique(&prints);
        let markers = results(log)
            .iter()
            .filter(|r| r["ruleId"] == "conflict-marker")
            .count();
        assert_eq!(markers, expected_markers, "{log:#}");
        let id = log["runs"][0]["automationDetails"]["id"]
            .as_str()
            .expect("automationDetails.id");
        // The category is the pipeline's (`examples/local.kdl` is `local-review`).
        assert!(id.starts_with("reviewflow/review/local-review/"), "{id}");
        for rule in log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules")
        {
            for field in ["name", "shortDescription", "fullDescription", "help"] {
                assert!(rule.get(field).is_some(), "{field} of {rule}");
            }
        }
    }
    // The second push is compared with the first: a new finding, and the resolved leftover is
    // not a result (a consumer reads every result as live; review.json lists it).
    let states: Vec<&str> = results(&second)
        .iter()
        .filter_map(|r| r["baselineState"].as_str())
        .collect();
    assert!(
        states.contains(&"new") && !states.contains(&"absent"),
        "{states:?}"
    );
    assert!(
        results(&second)
            .iter()
            .all(|r| r["ruleId"] != "debug-leftover"),
        "{second:#}"
    );
    assert!(
        results(&first)
            .iter()
            .all(|r| r.get("baselineState").is_none())
    );
    let fixed = results(&first)
        .iter()
        .find(|r| r["ruleId"] == "trailing-whitespace")
        .expect("the trailing whitespace's finding");
    assert_eq!(
        fixed["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"],
        "console.log('here');",
        "{fixed:#}"
    );
    let whole_file = results(&first)
        .iter()
        .find(|r| r["properties"]["wholeFile"] == true)
        .expect("the binary file's finding");
    assert_eq!(
        whole_file["locations"][0]["physicalLocation"]["region"]["startLine"],
        1
    );

    let Some(tool) = multitool() else { return };
    for (name, text) in [("first.sarif", first_text), ("second.sarif", second_text)] {
        let problems = problems(&tool, name, &text);
        assert!(problems.is_empty(), "{name}: {problems:#?}\n{text}");
    }
}

/// Guards the validation itself: a run that reported nothing would pass the tests above.
#[test]
fn the_multitool_reports_what_github_refuses() {
    let Some(tool) = multitool() else { return };
    let run = reviewflow_in(
        &root(),
        &[
            "check",
            "--format",
            "sarif",
            "--fail-on",
            "never",
            "tests/fixtures/pipelines/untrusted-title.kdl",
        ],
    );
    let mut log: Value = serde_json::from_str(&run.stdout).expect("SARIF is JSON");
    let location = &mut log["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    location["artifactLocation"]["uri"] = "/tmp/x.kdl".into();
    if let Some(physical) = location.as_object_mut() {
        physical.remove("region");
    }
    if let Some(rule) = log["runs"][0]["tool"]["driver"]["rules"][0].as_object_mut() {
        rule.remove("fullDescription");
    }
    let problems = problems(&tool, "broken.sarif", &log.to_string());
    let rules: Vec<&str> = problems
        .iter()
        .filter_map(|p| p.split(' ').next())
        .collect();
    for expected in ["SARIF1004", "SARIF2017", "GH2012"] {
        assert!(rules.contains(&expected), "{expected} in {problems:#?}");
    }
}

/// GitHub refuses a run of more than 25,000 results: the log holds that many, says how many it
/// left out, and stays valid; stderr says it too (`docs/sarif.md#at-most-25000-results`).
#[test]
fn a_check_log_past_github_s_limit_is_capped_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let many = dir.path().join("many.kdl");
    std::fs::write(
        &many,
        format!("pipeline \"many\"\n{}", "bogus\n".repeat(25_003)),
    )
    .expect("write");
    let run = reviewflow_in(
        dir.path(),
        &[
            "check",
            "--format",
            "sarif",
            "--fail-on",
            "never",
            "many.kdl",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log: Value = serde_json::from_str(&run.stdout).expect("SARIF is JSON");
    assert_eq!(results(&log).len(), 25_000);
    assert_eq!(log["runs"][0]["properties"]["resultsLeftOut"], 3);
    assert!(
        run.stderr
            .contains("warning: 3 results left out of the SARIF log"),
        "{}",
        run.stderr
    );
    assert_schema_valid(&log);
    let Some(tool) = multitool() else { return };
    // What is new here is the run's notification and properties: the Multitool reads them in a
    // log cut to its first results (each result's shape is the other tests' concern), in a
    // second rather than a minute.
    let mut cut = log;
    if let Some(results) = cut["runs"][0]["results"].as_array_mut() {
        results.truncate(10);
    }
    let text = serde_json::to_string_pretty(&cut).expect("JSON");
    let problems = problems(&tool, "capped.sarif", &text);
    assert!(problems.is_empty(), "{problems:#?}");
}
