//! The change's running total of what its reviews spent, on the local forge: `std/post … cost`
//! keeps it in the record and says it under `review.md`, `std/gather`'s `spent` reads it back
//! for the next run, and a post without `cost` keeps it as it was (docs/local-forge.md, "Costs
//! and budgets").

use std::path::PathBuf;

use crate::support::{Repo, Run, files_under};

/// A review whose cost a `run` stage reads from `cost.json` (standing in for `std/review`'s
/// `cost` output, whose JSON it has).
const PRICED: &str = r#"pipeline "spent"
forge "local"
stage "gather" uses="std/gather"
stage "review" uses="std/review" {
    reviewer "rules"
    untrusted "gather.diff"
}
stage "price" uses="run" {
    command "cat" "cost.json"
    output "cost" type="json"
}
stage "post" uses="std/post" {
    comment "review.comment"
    findings "review.findings"
    cost "price.cost"
    require-head "gather.head"
}
"#;

/// The same pipeline, its post given no cost.
const UNPRICED: &str = r#"pipeline "spent"
forge "local"
stage "gather" uses="std/gather"
stage "review" uses="std/review" {
    reviewer "rules"
    untrusted "gather.diff"
}
stage "post" uses="std/post" {
    comment "review.comment"
    findings "review.findings"
    require-head "gather.head"
}
"#;

fn run(repo: &Repo, pipeline: &str) -> Run {
    let out = crate::support::command()
        .args(["run", pipeline])
        .current_dir(repo.path())
        .env_remove("REVIEW_CONVERSATION_KEY")
        .output()
        .expect("the binary runs");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(run.code, 0, "{}", run.transcript());
    run
}

/// The file named `name` the local forge wrote for the change.
fn forge_file(repo: &Repo, name: &str) -> PathBuf {
    files_under(&repo.path().join(".reviewflow/forge"))
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == name))
        .unwrap_or_else(|| panic!("no {name} written"))
}

fn record_spent(repo: &Repo) -> serde_json::Value {
    let bytes = std::fs::read(forge_file(repo, "posted.json")).expect("the record");
    let record: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    record["spent"].clone()
}

/// The value of `stage`'s output `output` in the run `out` printed, as that run kept it.
fn output_of(out: &Run, stage: &str, output: &str) -> serde_json::Value {
    let dir = out
        .stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("run directory: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no run directory: {}", out.transcript()));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
            .expect("json");
    let record = manifest["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == stage))
        .unwrap_or_else(|| panic!("no stage {stage}"));
    let file = record["outputs"][output]["file"]
        .as_str()
        .unwrap_or_else(|| panic!("no kept {stage}.{output}: {record}"));
    serde_json::from_slice(&std::fs::read(dir.join(file)).expect("the output")).expect("json")
}

fn usage(input: u64, output: u64, cached: u64, usd: Option<f64>) -> serde_json::Value {
    serde_json::json!({
        "input_tokens": input,
        "output_tokens": output,
        "cached_tokens": cached,
        "cost_usd": usd,
    })
}

fn cost(run: &serde_json::Value, change: &serde_json::Value) -> String {
    serde_json::json!({ "run": run, "change": change, "tries": [run] }).to_string()
}

#[test]
fn the_change_keeps_its_running_total_across_pushes() {
    let repo = Repo::init();
    repo.commit("pipeline.kdl", PRICED, "pipeline");
    repo.write("unpriced.kdl", UNPRICED);
    repo.git(&["checkout", "-q", "-b", "feature"]);

    // First push: nothing spent before; the review cost 12,345 tokens and $0.0123.
    repo.commit_file("src/a.rs", "fn a() {}\n", "a");
    let first = usage(12_000, 345, 0, Some(0.0123));
    repo.write("cost.json", &cost(&first, &first));
    let out = run(&repo, "pipeline.kdl");
    assert_eq!(
        output_of(&out, "gather", "spent"),
        usage(0, 0, 0, Some(0.0)),
        "no earlier review: nothing spent"
    );
    assert_eq!(record_spent(&repo), first);
    let md = std::fs::read_to_string(forge_file(&repo, "review.md")).expect("review.md");
    assert!(
        md.ends_with(
            "\n\nCost: this review 12,345 tokens (12,000 in, 345 out, 0 cached), $0.0123 · \
             this change so far 12,345 tokens (12,000 in, 345 out, 0 cached), $0.0123\n"
        ),
        "{md}"
    );

    // Second push: gather reads the total back; the review says the new one.
    repo.commit_file("src/b.rs", "fn b() {}\n", "b");
    let second = usage(33_000, 333, 1_000, None);
    let total = usage(45_000, 678, 1_000, None);
    repo.write("cost.json", &cost(&second, &total));
    let out = run(&repo, "pipeline.kdl");
    assert_eq!(output_of(&out, "gather", "spent"), first);
    assert_eq!(record_spent(&repo), total);
    let md = std::fs::read_to_string(forge_file(&repo, "review.md")).expect("review.md");
    assert!(
        md.contains(
            "Cost: this review 33,333 tokens (33,000 in, 333 out, 1,000 cached), cost not reported · \
             this change so far 45,678 tokens (45,000 in, 678 out, 1,000 cached), cost not reported"
        ),
        "{md}"
    );

    // Third push, by a post given no cost: the total is kept as it was, and no footer says one.
    repo.commit_file("src/c.rs", "fn c() {}\n", "c");
    let out = run(&repo, "unpriced.kdl");
    assert_eq!(output_of(&out, "gather", "spent"), total);
    assert_eq!(record_spent(&repo), total);
    let md = std::fs::read_to_string(forge_file(&repo, "review.md")).expect("review.md");
    assert!(!md.contains("Cost:"), "{md}");
}
