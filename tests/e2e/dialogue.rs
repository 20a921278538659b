//! The author answers (docs/findings.md, "Answering a finding"): four pushes of a change on the
//! local forge, in which the author refutes one finding (accepted in the next round), fixes
//! another, and refutes a third that the reviewer upholds; the verdict of each round, through
//! `run --fail-on warning`.

use serde_json::{Value, json};

use crate::support::{Repo, Run};

/// A `command` reviewer that prints the answers it was given and whether it was asked to
/// decide, then reports `$FINDINGS` and `$DECISIONS`.
fn pipeline(findings: &Value, decisions: &Value) -> String {
    format!(
        r##"pipeline "dialogue"
forge "local"
stage "gather" uses="std/gather" {{
    responses
}}
stage "review" uses="std/review" {{
    reviewer "command"
    command "sh" "-c" #"if [ -f "$REVIEWFLOW_INPUTS/gather.responses" ]; then echo "given: $(cat "$REVIEWFLOW_INPUTS/gather.responses")"; fi; grep -c '^## The author.s answers' "$REVIEWFLOW_PROMPT" | sed 's/^/asked to decide: /'; printf '{{{{"version":1,"comment":"c","findings":%s,"decisions":%s,"conversation":null,"resumed":false}}}}' "$FINDINGS" "$DECISIONS" > "$REVIEWFLOW_RESULT""#
    env "FINDINGS" "{findings}"
    env "DECISIONS" "{decisions}"
    untrusted "gather.diff"
    responses "gather.responses"
}}
stage "post" uses="std/post" {{
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    responses "gather.responses"
    decisions "review.decisions"
}}
"##,
        findings = escape(findings),
        decisions = escape(decisions),
    )
}

/// `value` as the inside of a KDL string template: quotes and backslashes escaped, braces
/// doubled.
fn escape(value: &Value) -> String {
    value
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('{', "{{")
        .replace('}', "}}")
}

fn finding(line: u32, rule: &str) -> Value {
    json!({"path": "src/app.rs", "line": line, "severity": "warning", "rule": rule, "message": format!("{rule} is wrong")})
}

fn decision(id: &str, verdict: &str) -> Value {
    json!({"finding": id, "decision": verdict, "reason": format!("{verdict} after reading the answer")})
}

/// One push and its review: the run's exit status under `--fail-on warning`.
fn push(repo: &Repo, text: &str, findings: Value, decisions: Value) -> Run {
    repo.write("review.kdl", &pipeline(&findings, &decisions));
    repo.commit("src/app.rs", text, "push");
    let out = crate::support::command()
        .args(["run", "review.kdl", "--fail-on", "warning"])
        .current_dir(repo.path())
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn forge_file(repo: &Repo, file: &str) -> std::path::PathBuf {
    repo.path()
        .join(".reviewflow/forge/branch-topic/dialogue")
        .join(file)
}

fn review_json(repo: &Repo) -> Value {
    let text = std::fs::read_to_string(forge_file(repo, "review.json")).expect("review.json");
    serde_json::from_str(&text).expect("review.json parses")
}

/// `rule → (id, state)` of the findings and the resolved ones.
fn by_rule(json: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = json["findings"]
        .as_array()
        .into_iter()
        .chain(json["resolved"].as_array())
        .flatten()
        .map(|f| {
            let print = f["fingerprint"].as_str().unwrap_or_default();
            (
                f["rule"].as_str().unwrap_or_default().to_owned(),
                format!("rf-{}", &print[..8.min(print.len())]),
                f["state"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

fn id_of(rows: &[(String, String, String)], rule: &str) -> String {
    rows.iter()
        .find(|r| r.0 == rule)
        .map(|r| r.1.clone())
        .unwrap_or_else(|| panic!("no finding of {rule}: {rows:?}"))
}

fn states(rows: &[(String, String, String)]) -> Vec<(&str, &str)> {
    rows.iter().map(|r| (r.0.as_str(), r.2.as_str())).collect()
}

const V1: &str =
    "fn main() {\n    let a = parse();\n    let b = cache();\n    let c = spawn();\n}\n";
/// `b` fixed; the others as they were.
const V2: &str =
    "fn main() {\n    let a = parse();\n    let b = cache_bounded();\n    let c = spawn();\n}\n";
/// A comment added above: nothing the findings point at changes.
const V3: &str = "// the entry point\nfn main() {\n    let a = parse();\n    let b = cache_bounded();\n    let c = spawn();\n}\n";
/// `c` fixed at last.
const V4: &str = "// the entry point\nfn main() {\n    let a = parse();\n    let b = cache_bounded();\n    let c = spawn_joined();\n}\n";

#[test]
fn four_pushes_of_answers_refuted_accepted_fixed_and_upheld() {
    let repo = Repo::init();
    repo.commit("README.md", "base\n", "base");
    repo.git(&["checkout", "-q", "-b", "topic"]);

    // Round 1: three findings, all open: the round fails.
    let out = push(
        &repo,
        V1,
        json!([finding(2, "a"), finding(3, "b"), finding(4, "c")]),
        json!([]),
    );
    assert_eq!(out.code, 3, "{}", out.transcript());
    assert!(!out.stdout.contains("given:"), "{}", out.transcript());
    assert!(
        out.transcript().contains("asked to decide: 0"),
        "{}",
        out.transcript()
    );
    let rows = by_rule(&review_json(&repo));
    let (a, c) = (id_of(&rows, "a"), id_of(&rows, "c"));
    let md = std::fs::read_to_string(forge_file(&repo, "review.md")).expect("review.md");
    assert!(md.contains(&format!("`{a}`")), "the id is shown: {md}");

    // The author refutes `a`, and says `b` is fixed (push 2 fixes it). A quoted line and a
    // line naming no finding are not responses.
    std::fs::write(
        forge_file(&repo, "responses.md"),
        format!(
            "refuted {a}: parse() cannot fail on this input\n\n> refuted {c}: quoted\n\
             refuted rf-00000000: no such finding\n"
        ),
    )
    .expect("responses.md");
    // Round 2: the reviewer is given the refutation and accepts it (dropping `a`); `b` is gone
    // from the code; `c` stays open: the round fails.
    let out = push(
        &repo,
        V2,
        json!([finding(4, "c")]),
        json!([decision(&a, "accepted")]),
    );
    assert_eq!(out.code, 3, "{}", out.transcript());
    let log = out.transcript();
    assert!(
        log.contains("given: ") && log.contains("parse() cannot fail on this input"),
        "{log}"
    );
    assert!(
        log.contains("asked to decide: ") && !log.contains("asked to decide: 0"),
        "{log}"
    );
    assert!(
        log.contains(
            "1 of 2 read are new answers to the last review's findings; 1 name no finding of it"
        ),
        "{log}"
    );
    let json = review_json(&repo);
    let rows = by_rule(&json);
    assert_eq!(
        states(&rows),
        [("a", "accepted"), ("b", "resolved"), ("c", "persisting")],
        "{json:#}"
    );
    assert_eq!(json["states"]["accepted"], 1, "{json:#}");
    let accepted = &json["resolved"][0];
    assert_eq!(
        accepted["dialogue"]["reason"],
        "parse() cannot fail on this input"
    );
    assert_eq!(
        accepted["dialogue"]["answer"],
        "accepted after reading the answer"
    );

    // The author refutes `c`. Round 3: the reviewer upholds it and lists it again: the round
    // fails, and the same refutation is not given again later.
    std::fs::write(
        forge_file(&repo, "responses.md"),
        format!("refuted {a}: parse() cannot fail on this input\nrefuted {c}: spawn() is joined by the caller\n"),
    )
    .expect("responses.md");
    let out = push(
        &repo,
        V3,
        json!([finding(5, "c")]),
        json!([decision(&c, "upheld")]),
    );
    assert_eq!(out.code, 3, "{}", out.transcript());
    let log = out.transcript();
    assert!(log.contains("spawn() is joined by the caller"), "{log}");
    let given = log
        .lines()
        .find(|l| l.contains("given: "))
        .unwrap_or_else(|| panic!("nothing given: {log}"));
    assert!(
        given.contains(&c) && !given.contains(&a),
        "an answered refutation is not given again: {given}"
    );
    let json = review_json(&repo);
    assert_eq!(states(&by_rule(&json)), [("c", "upheld")], "{json:#}");
    let md = std::fs::read_to_string(forge_file(&repo, "review.md")).expect("review.md");
    assert!(
        md.contains("_upheld_") && md.contains("refuted by `local`: `spawn() is joined by the caller` — the reviewer upheld the finding"),
        "{md}"
    );
    let sarif = std::fs::read_to_string(forge_file(&repo, "review.sarif")).expect("sarif");
    assert!(sarif.contains("\"reviewflowState\": \"upheld\""), "{sarif}");

    // Round 4: `c` fixed; nothing is open: the round passes.
    let out = push(&repo, V4, json!([]), json!([]));
    assert_eq!(out.code, 0, "{}", out.transcript());
    assert!(!out.stdout.contains("given:"), "{}", out.transcript());
    let json = review_json(&repo);
    assert_eq!(states(&by_rule(&json)), [("c", "resolved")], "{json:#}");
}

/// A decision the reviewer was not asked for changes nothing, and a refutation it does not
/// decide on stays refuted, failing, and is given again in the next round.
#[test]
fn an_undecided_refutation_fails_and_is_asked_again() {
    let repo = Repo::init();
    repo.commit("README.md", "base\n", "base");
    repo.git(&["checkout", "-q", "-b", "topic"]);
    push(&repo, V1, json!([finding(2, "a")]), json!([]));
    let a = id_of(&by_rule(&review_json(&repo)), "a");
    std::fs::write(
        forge_file(&repo, "responses.md"),
        format!("refuted {a}: not a bug\n"),
    )
    .expect("responses.md");
    let out = push(
        &repo,
        V3,
        json!([finding(3, "a")]),
        json!([decision("rf-12345678", "accepted")]),
    );
    assert_eq!(out.code, 3, "{}", out.transcript());
    assert!(
        out.transcript().contains(
            "1 of the reviewer's decisions name no refutation it was given, and were ignored"
        ),
        "{}",
        out.transcript()
    );
    assert_eq!(states(&by_rule(&review_json(&repo))), [("a", "refuted")]);
    let out = push(
        &repo,
        V1,
        json!([finding(2, "a")]),
        json!([decision(&a, "accepted")]),
    );
    assert!(
        out.transcript().contains("not a bug"),
        "{}",
        out.transcript()
    );
    assert_eq!(out.code, 0, "{}", out.transcript());
    assert_eq!(states(&by_rule(&review_json(&repo))), [("a", "accepted")]);
}
