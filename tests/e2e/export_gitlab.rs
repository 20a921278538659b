//! `reviewflow export gitlab` (docs/gitlab.md, "The exported pipeline"): the kept export of the
//! GitLab example is what the command writes, it parses as YAML with the jobs the partition
//! makes, `--image` is refused without a digest, and GitLab's CI schema finds nothing in it.
//!
//! check-jsonschema is found through `REVIEWFLOW_CHECK_JSONSCHEMA`, else in the cache `.ci/run`
//! installs it to, else on `PATH`. Without it the schema test fails under `CI=true` and is
//! skipped with a note otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

use crate::support::{reviewflow, root};

const PIPELINE: &str = "examples/gitlab/review.kdl";
const KEPT: &str = "examples/gitlab/review.export.yml";
/// The image the kept export names: a digest of zeros, which no registry holds.
pub(crate) const IMAGE: &str = "registry.example.com/reviewflow@sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// Where `.ci/run` installs check-jsonschema, under `$HOME`.
const CACHED_BIN: &str = ".cache/reviewflow-ci/gitlab-schema/bin/check-jsonschema";

fn kept() -> String {
    std::fs::read_to_string(root().join(KEPT)).unwrap_or_default()
}

#[test]
fn the_kept_gitlab_export_is_what_export_writes() {
    let run = reviewflow(&["export", "gitlab", PIPELINE, "--image", IMAGE]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout == kept(),
        "{KEPT} is out of date: run `cargo run -- export gitlab {PIPELINE} --image {IMAGE} --out \
         {KEPT}`"
    );
}

#[test]
fn the_example_passes_check_clean() {
    let run = reviewflow(&["check", PIPELINE]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr.contains("0 errors, 0 warnings"),
        "{}",
        run.transcript()
    );
}

#[test]
fn the_export_parses_as_yaml_with_one_stage_per_job() {
    let docs = YamlLoader::load_from_str(&kept()).expect("YAML");
    let doc = &docs[0];
    let stages: Vec<&str> = doc["stages"]
        .as_vec()
        .expect("stages")
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(stages, ["gather", "post"]);
    for (i, stage) in stages.iter().enumerate() {
        let job = &doc[*stage];
        assert_eq!(job["stage"].as_str(), Some(*stage));
        assert_eq!(job["image"].as_str(), Some(IMAGE));
        assert_eq!(job["environment"]["name"].as_str(), Some("enroll-review"));
        assert_eq!(job["environment"]["action"].as_str(), Some("access"));
        assert_eq!(
            job["artifacts"]["paths"][0].as_str(),
            Some("reviewflow-runs/")
        );
        assert_eq!(job["artifacts"]["when"].as_str(), Some("always"));
        let needs = job["needs"].as_vec().expect("needs");
        if i == 0 {
            assert!(needs.is_empty());
        } else {
            assert_eq!(needs[0]["job"].as_str(), Some(stages[i - 1]));
            assert_eq!(needs[0]["artifacts"].as_bool(), Some(true));
        }
    }
    let rules = doc["workflow"]["rules"].as_vec().expect("rules");
    assert_eq!(rules.len(), 3);
    // No secret's value, and no variable of a secret, is in the jobs.
    let text = kept();
    for var in ["REVIEW_GITLAB_TOKEN", "ANTHROPIC_API_KEY"] {
        assert!(
            text.lines()
                .filter(|l| l.contains(var))
                .all(|l| l.trim_start().starts_with('#')),
            "{var}"
        );
    }
}

#[test]
fn an_image_without_a_digest_is_refused() {
    for args in [
        vec!["export", "gitlab", PIPELINE],
        vec!["export", "gitlab", PIPELINE, "--image", "alpine:3"],
    ] {
        let run = reviewflow(&args);
        assert_eq!(run.code, 2, "{}", run.transcript());
        assert!(run.stderr.contains("--image"), "{}", run.transcript());
        assert!(run.stdout.is_empty(), "{}", run.transcript());
    }
}

#[test]
fn a_github_pipeline_is_not_exported_to_gitlab() {
    let run = reviewflow(&["export", "gitlab", "examples/review.kdl", "--image", IMAGE]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stdout.is_empty(), "{}", run.transcript());
}

/// check-jsonschema, or `None` (after failing under CI, or printing why the test is skipped).
fn check_jsonschema() -> Option<PathBuf> {
    let var = "REVIEWFLOW_CHECK_JSONSCHEMA";
    let named = std::env::var_os(var).map(PathBuf::from);
    let cached = std::env::var_os("HOME").map(|home| Path::new(&home).join(CACHED_BIN));
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("check-jsonschema"))
            .find(|p| p.is_file())
    });
    let found = match &named {
        Some(p) => Some(p.clone()).filter(|p| p.is_file()),
        None => cached.filter(|p| p.is_file()).or(on_path),
    };
    if found.is_none() {
        crate::support::skipped(
            "GitLab CI schema test: install check-jsonschema with `pip install check-jsonschema` (`.ci/run` does)",
        );
    }
    found
}

#[test]
fn gitlab_ci_schema_finds_nothing() {
    let Some(tool) = check_jsonschema() else {
        return;
    };
    // The schema is check-jsonschema's own copy: no network.
    let out = Command::new(tool)
        .args(["--builtin-schema", "vendor.gitlab-ci"])
        .arg(root().join(KEPT))
        .output()
        .expect("check-jsonschema runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every job of the example's review shares one resource group per merge request: the
/// pipeline's name and the variable its merge request is read from, which GitLab expands.
#[test]
fn every_job_waits_for_the_other_jobs_of_its_merge_requests_review() {
    let docs = YamlLoader::load_from_str(&kept()).expect("YAML");
    let doc = &docs[0];
    let stages: Vec<&str> = doc["stages"]
        .as_vec()
        .expect("stages")
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert!(!stages.is_empty());
    for job in stages {
        assert_eq!(
            doc[job]["resource_group"].as_str(),
            Some("enroll-review-$REVIEWFLOW_MERGE_REQUEST"),
            "{job}"
        );
    }
}
