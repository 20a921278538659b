//! `reviewflow run --stages`: one job of an exported workflow. The named stages run, what is
//! upstream of them comes from the `--resume` parent (admitted by identity), the rest is not
//! run; the jobs run one after another give the review a single run gives
//! (docs/executor.md, "Partial runs").

use std::path::Path;

use crate::support::{Repo, Run};

const KEY: &str = "0123456789abcdef0123456789abcdef-partial";
const JOB_1: &str = "gather,restore,review,scan,seal";

/// `reviewflow run examples/local.kdl ARGS` in `dir`, with or without the conversation key.
fn run(dir: &Path, args: &[&str], key: bool) -> Run {
    let mut c = crate::support::command();
    c.arg("run")
        .arg("examples/local.kdl")
        .args(args)
        .current_dir(dir)
        .env_remove("REVIEW_CONVERSATION_KEY");
    if key {
        c.env("REVIEW_CONVERSATION_KEY", KEY);
    }
    let out = c.output().expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The run id a run printed (`run directory: …/runs/<id>`).
fn run_id(r: &Run) -> String {
    let line = r
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("run directory: "))
        .unwrap_or_else(|| panic!("no run directory in:\n{}", r.transcript()));
    Path::new(line)
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a run id")
        .to_owned()
}

/// Each stage's outcome and reason in a run's manifest.
fn outcomes(dir: &Path, id: &str) -> Vec<(String, String, Option<String>)> {
    let text = std::fs::read_to_string(dir.join(".reviewflow/runs").join(id).join("manifest.json"))
        .expect("manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_owned(),
                s["outcome"].as_str().unwrap_or_default().to_owned(),
                s["reason"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// The posted review's files of the only change, without what names the run.
fn posted(dir: &Path) -> (String, serde_json::Value) {
    let forge = dir.join(".reviewflow/forge");
    let change = std::fs::read_dir(&forge)
        .expect("forge folder")
        .flatten()
        .find(|e| e.path().is_dir())
        .expect("a change folder")
        .path()
        // One folder per pipeline inside the change's.
        .join("local-review");
    let md = std::fs::read_to_string(change.join("review.md")).expect("review.md");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(change.join("review.json")).expect("json"))
            .expect("JSON");
    strip_run(&mut json);
    (strip_run_text(&md), json)
}

fn strip_run(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !matches!(k.as_str(), "run_id" | "conversation_id" | "posted_at"));
            map.values_mut().for_each(strip_run);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_run),
        _ => {}
    }
}

/// review.md's words, with the commits and the run (the words after `base`, `head` and `run`:
/// the two checkouts' commits differ in their dates) blanked.
fn strip_run_text(md: &str) -> String {
    let words: Vec<&str> = md.split_whitespace().collect();
    words
        .iter()
        .enumerate()
        .map(|(i, w)| match i.checked_sub(1).map(|p| words[p]) {
            Some("base" | "head" | "run") => "…",
            _ => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A checkout with a change the `rules` reviewer has something to say about.
fn repo() -> Repo {
    let repo = Repo::local_example();
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.commit("src/app.js", "console.log('here');\n", "debug");
    repo
}

#[test]
fn the_jobs_run_one_after_another_give_the_review_of_a_single_run() {
    let split = repo();
    let first = run(split.path(), &["--stages", JOB_1], true);
    assert_eq!(first.code, 0, "{}", first.transcript());
    let id = run_id(&first);
    let stages = outcomes(split.path(), &id);
    assert!(
        stages.contains(&(
            "post".into(),
            "not-run".into(),
            Some("not in --stages".into())
        )),
        "{stages:?}"
    );
    assert!(
        !split.path().join(".reviewflow/forge").exists()
            || crate::support::files_under(&split.path().join(".reviewflow/forge"))
                .iter()
                .all(|f| f.file_name().is_some_and(|n| n == ".gitignore")),
        "the first job posted"
    );
    // The posting job holds no key: it is not read, and not warned about.
    let second = run(split.path(), &["--stages", "post", "--resume", &id], false);
    assert_eq!(second.code, 0, "{}", second.transcript());
    assert!(
        !second.stderr.contains("conversation-key"),
        "{}",
        second.transcript()
    );
    let id2 = run_id(&second);
    for (stage, outcome, _) in outcomes(split.path(), &id2) {
        let want = if stage == "post" {
            "succeeded"
        } else {
            "reused"
        };
        assert_eq!(outcome, want, "{stage}");
    }

    let whole = repo();
    let single = run(whole.path(), &[], true);
    assert_eq!(single.code, 0, "{}", single.transcript());
    let (md_split, json_split) = posted(split.path());
    let (md_whole, json_whole) = posted(whole.path());
    assert_eq!(json_split["findings"], json_whole["findings"]);
    assert!(
        json_split["findings"]
            .as_array()
            .is_some_and(|f| !f.is_empty()),
        "the change has findings: {json_split}"
    );
    assert_eq!(md_split, md_whole);
}

#[test]
fn a_job_without_its_upstream_is_refused_before_anything_runs() {
    let r = repo();
    let alone = run(r.path(), &["--stages", "post"], false);
    assert_eq!(alone.code, 2, "{}", alone.transcript());
    assert!(
        alone
            .stderr
            .contains("--stages needs the outputs of `gather`"),
        "{}",
        alone.transcript()
    );
    assert!(
        !r.path().join(".reviewflow/runs").exists() || {
            std::fs::read_dir(r.path().join(".reviewflow/runs"))
                .map(|d| d.flatten().all(|e| !e.path().is_dir()))
                .unwrap_or(true)
        }
    );

    // A parent that ran only gather cannot feed post.
    let gather = run(r.path(), &["--stages", "gather"], false);
    assert_eq!(gather.code, 0, "{}", gather.transcript());
    let id = run_id(&gather);
    let post = run(r.path(), &["--stages", "post", "--resume", &id], false);
    assert_eq!(post.code, 2, "{}", post.transcript());
    assert!(
        post.stderr
            .contains(&format!("run `{id}` did not complete `restore`")),
        "{}",
        post.transcript()
    );
}

#[test]
fn another_pipelines_outputs_are_refused() {
    let r = repo();
    let first = run(r.path(), &["--stages", JOB_1], true);
    assert_eq!(first.code, 0, "{}", first.transcript());
    let id = run_id(&first);
    // The same file with another gate: another pipeline, another identity.
    let path = r.path().join("examples/local.kdl");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replace("gate warn=\"red\"", "gate warn=\"yellow\""),
    )
    .expect("write");
    let post = run(r.path(), &["--stages", "post", "--resume", &id], false);
    assert_eq!(post.code, 2, "{}", post.transcript());
    assert!(
        post.stderr.contains("it did not review the same thing")
            && post.stderr.contains("pipeline"),
        "{}",
        post.transcript()
    );
}

#[test]
fn an_unknown_stage_is_refused_with_the_stages_listed() {
    let r = repo();
    let out = run(r.path(), &["--stages", "gather,nosuch"], false);
    assert_eq!(out.code, 2, "{}", out.transcript());
    assert!(
        out.stderr
            .contains("--stages names no stage `nosuch` of this pipeline")
            && out
                .stderr
                .contains("`gather`, `restore`, `review`, `scan`, `seal`, `post`"),
        "{}",
        out.transcript()
    );
}

#[test]
fn what_fell_back_upstream_falls_back_again() {
    // Without the key, restore and seal fall back in the first job; the posting job takes them
    // as they were and keeps a tombstone.
    let r = repo();
    let first = run(r.path(), &["--stages", JOB_1], false);
    assert_eq!(first.code, 0, "{}", first.transcript());
    let id = run_id(&first);
    let second = run(r.path(), &["--stages", "post", "--resume", &id], false);
    assert_eq!(second.code, 0, "{}", second.transcript());
    let stages = outcomes(r.path(), &run_id(&second));
    let fell_back = Some(format!("from run {id}: it fell back there"));
    assert!(
        stages.contains(&("restore".into(), "fell-back".into(), fell_back.clone()))
            && stages.contains(&("seal".into(), "fell-back".into(), fell_back)),
        "{stages:?}"
    );
    assert!(
        stages.contains(&("post".into(), "succeeded".into(), None)),
        "{stages:?}"
    );
}

#[test]
fn under_github_actions_the_run_id_is_a_step_output() {
    // The next job of an exported workflow resumes `steps.run.outputs.run-id`.
    let r = repo();
    let output = r.path().join("github-output");
    std::fs::write(&output, "earlier=1\n").expect("write");
    let out = crate::support::command()
        .args(["run", "examples/local.kdl", "--stages", "gather"])
        .current_dir(r.path())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &output)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("REVIEW_CONVERSATION_KEY")
        .output()
        .expect("the binary runs");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(run.code, 0, "{}", run.transcript());
    let id = run_id(&run);
    assert_eq!(
        std::fs::read_to_string(&output).expect("read"),
        format!("earlier=1\nrun-id={id}\n")
    );
}
