//! Small pipelines, each with exactly one problem the compiler must name (input → check id).

use crate::support::reviewflow;

fn findings(text: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("p.kdl");
    std::fs::write(&file, text).expect("write");
    let run = reviewflow(&[
        "check",
        "--format",
        "json",
        "--fail-on",
        "never",
        file.to_str().expect("utf-8"),
    ]);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            format!(
                "{}: {}",
                f["check"].as_str().unwrap_or(""),
                f["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn each_case_gives_exactly_its_finding() {
    let cases: &[(&str, &str)] = &[
        (
            "pipeline \"p\"\nforge \"local\" token=\"t\"\n",
            "unknown-property",
        ),
        (
            "pipeline \"p\"\nforge \"github\" dir=\"x\"\n",
            "unknown-property",
        ),
        ("pipeline \"p\"\ntrigger \"issues\"\n", "type-mismatch"),
        // GitLab's merge request pipelines take the kinds of merge request pipeline as types,
        // and its target branches as GitLab names them.
        (
            "pipeline \"p\"\ntrigger \"merge_request_event\" types=\"opened\"\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\ntrigger \"merge_request_event\" branches=\"release/**?\"\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\ntrigger \"pull_request\" types=\"opened pushed\"\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\ntrigger \"pull_request\" types=\" \"\n",
            "type-mismatch",
        ),
        // Every bad word of a list is one finding: the first, and a count.
        (
            "pipeline \"p\"\ntrigger \"pull_request\" types=\"opend pushd closd\"\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\ntrigger \"pull_request_target\" branches=\"main ${{x}}\"\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\ntrigger \"pull_request_target\" branches=\"!old !older\"\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\ntrigger \"workflow_dispatch\" types=\"opened\"\n",
            "unknown-property",
        ),
        (
            "pipeline \"p\"\ntrigger \"schedule\" branches=\"main\"\n",
            "unknown-property",
        ),
        (
            "pipeline \"p\"\ntrigger \"pull_request\"\ntrigger \"pull_request\" branches=\"main\"\n",
            "duplicate-name",
        ),
        (
            "pipeline \"p\"\ntrigger \"workflow_dispatch\" {\n    inputs \"pr\"\n}\n",
            "unknown-node",
        ),
        ("pipeline \"p\"\ntrigger\n", "missing-required"),
        (
            "pipeline \"p\"\nsecret \"k\" env=\"K\" environment=\"keys: all\" {\n    visible-to \"a\"\n}\nstage \"a\" uses=\"run\" {\n    command \"true\"\n    secret-env \"K\" \"k\"\n}\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\nstore \"s\" {\n    trust\n}\n",
            "missing-required",
        ),
        (
            "pipeline \"p\"\nstage \"a\" uses=\"std/gather\"\nstage \"b\" uses=\"std/gather\" {\n    needs \"a\" \"a\"\n}\n",
            "duplicate-name",
        ),
        (
            "pipeline \"p\"\nstage \"a\" uses=\"std/gather\" timeout=\"0s\"\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\nstage \"a\" uses=\"std/gather\" {\n    max-bytes -5\n}\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n    output \"x\"\n    output \"x\"\n}\n",
            "duplicate-name",
        ),
        (
            "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n    output \"ok\"\n}\n",
            "type-mismatch",
        ),
        (
            "pipeline \"p\"\nstage \"a\" uses=\"std/scan\" on-error=\"fallback\" {\n    target \"a.ok\"\n    fallback clean=#false\n    fallback clean=#false\n}\n",
            "duplicate-name",
        ),
        (
            "pipeline \"p\"\ninput \"x\" env=\"X\" pattern=\"(\"\n",
            "type-mismatch",
        ),
    ];
    for (text, check) in cases {
        let found = findings(text);
        let ids: Vec<&str> = found
            .iter()
            .map(|f| f.split(':').next().unwrap_or(""))
            .collect();
        assert!(
            ids.contains(check),
            "{text}\nexpected {check}, found {found:#?}"
        );
    }
}

/// A secret's `environment=` is judged by the syntax of the platform the pipeline runs on (its
/// forge's), wherever the `forge` node stands: `review/post` is a GitLab environment and no
/// GitHub one, `a:b` is neither.
#[test]
fn an_environment_name_follows_the_forges_platform() {
    let pipeline = |forge: &str, environment: &str| {
        format!(
            "pipeline \"p\"\nsecret \"k\" env=\"K\" environment=\"{environment}\" {{\n    visible-to \"a\"\n}}\nstage \"a\" uses=\"run\" {{\n    command \"true\"\n    secret-env \"K\" \"k\"\n}}\nforge \"{forge}\"\n"
        )
    };
    let refused = |forge: &str, environment: &str| {
        findings(&pipeline(forge, environment))
            .iter()
            .find(|f| f.starts_with("type-mismatch") && f.contains("`environment`"))
            .cloned()
    };
    assert_eq!(refused("gitlab", "review/post"), None);
    let github = refused("github", "review/post").expect("refused on GitHub");
    assert!(github.contains("(GitHub's)"), "{github}");
    let gitlab = refused("gitlab", "a:b").expect("refused on GitLab");
    assert!(gitlab.contains("(GitLab's"), "{gitlab}");
}
