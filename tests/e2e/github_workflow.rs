//! `examples/github/review.yml`, the workflow `docs/github.md` tells users to copy: it parses, it is
//! the block the doc shows, and it keeps the promises the doc makes about it.

use yaml_rust2::{Yaml, YamlLoader};

use crate::support::root;

fn workflow_text() -> String {
    std::fs::read_to_string(root().join("examples/github/review.yml")).expect("the workflow")
}

fn workflow() -> Yaml {
    let mut docs = YamlLoader::load_from_str(&workflow_text()).expect("the workflow is YAML");
    assert_eq!(docs.len(), 1, "one YAML document");
    docs.remove(0)
}

fn steps(wf: &Yaml) -> &[Yaml] {
    wf["jobs"]["review"]["steps"]
        .as_vec()
        .expect("the review job has steps")
}

fn step<'a>(wf: &'a Yaml, name: &str) -> &'a Yaml {
    steps(wf)
        .iter()
        .find(|s| s["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no step named {name:?}"))
}

#[test]
fn the_doc_shows_the_workflow_as_it_is() {
    let doc = std::fs::read_to_string(root().join("docs/github.md")).expect("docs/github.md");
    let block = doc
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .expect("a yaml block in docs/github.md");
    assert_eq!(
        block,
        workflow_text(),
        "docs/github.md and examples/github/review.yml differ"
    );
}

#[test]
fn it_runs_on_pull_request_target_with_per_job_permissions() {
    let wf = workflow();
    assert!(
        !wf["on"]["pull_request_target"].is_badvalue(),
        "triggered by pull_request_target"
    );
    assert!(
        wf["on"]["pull_request"].is_badvalue(),
        "never by pull_request"
    );
    let top = wf["permissions"].as_hash().expect("workflow permissions");
    assert!(top.is_empty(), "no permission at the workflow level");
    let job = &wf["jobs"]["review"];
    let perms = job["permissions"].as_hash().expect("job permissions");
    let perm = |k: &str| perms.get(&Yaml::String(k.into())).and_then(Yaml::as_str);
    assert_eq!(perm("pull-requests"), Some("write"));
    assert_eq!(perm("issues"), Some("write"));
    assert_eq!(perm("checks"), Some("write"));
    assert_eq!(perm("actions"), Some("read"));
    assert_eq!(perm("contents"), Some("read"));
    assert_eq!(perms.len(), 5, "nothing else: {perms:?}");
    assert_eq!(job["environment"].as_str(), Some("enroll-review"));
    assert!(job["env"].is_badvalue(), "no job-level environment");
}

#[test]
fn actions_are_pinned_and_checkout_keeps_no_credentials() {
    let wf = workflow();
    for s in steps(&wf) {
        let Some(uses) = s["uses"].as_str() else {
            continue;
        };
        let (_, rev) = uses.split_once('@').expect("a pinned action");
        assert!(
            rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()),
            "{uses} is not pinned by commit"
        );
    }
    let checkout = step(&wf, "Check out the base branch");
    assert_eq!(
        checkout["with"]["persist-credentials"].as_bool(),
        Some(false)
    );
    assert!(
        checkout["with"]["ref"].is_badvalue(),
        "the base branch, never the pull request's head"
    );
}

#[test]
fn secrets_reach_only_the_review_step() {
    let wf = workflow();
    for s in steps(&wf) {
        let text = format!("{s:?}");
        if s["name"].as_str() != Some("Review the pull request") {
            assert!(
                !text.contains("secrets."),
                "a secret outside the review step: {text}"
            );
        }
    }
    let review = step(&wf, "Review the pull request");
    assert_eq!(review["id"].as_str(), Some("review"));
    assert!(
        review["run"]
            .as_str()
            .is_some_and(|r| r.starts_with("reviewflow run ")),
        "the step runs reviewflow"
    );
    let env = &review["env"];
    assert_eq!(
        env["GITHUB_TOKEN"].as_str(),
        Some("${{ secrets.GITHUB_TOKEN }}")
    );
    assert_eq!(
        env["REVIEW_CONVERSATION_KEY"].as_str(),
        Some("${{ secrets.REVIEW_CONVERSATION_KEY }}")
    );
}

#[test]
fn the_upload_step_takes_what_the_run_names() {
    let wf = workflow();
    let upload = step(&wf, "Keep the sealed conversation");
    assert!(
        upload["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/upload-artifact@")),
        "an upload-artifact step"
    );
    // The outputs std/post writes for a github-artifacts store.
    assert_eq!(
        upload["with"]["name"].as_str(),
        Some("${{ steps.review.outputs.artifact-name }}")
    );
    assert_eq!(
        upload["with"]["path"].as_str(),
        Some("${{ steps.review.outputs.artifact-path }}")
    );
    assert_eq!(upload["with"]["if-no-files-found"].as_str(), Some("error"));
    assert_eq!(
        upload["if"].as_str(),
        Some("steps.review.outputs.artifact-name != ''")
    );
}
