//! A head that was already reviewed: `std/gather` stops the run (exit 0, nothing posted again,
//! the stages after it listed as not run), `--force` reviews it again, a new commit is reviewed
//! as usual, a resume of a stopped run decides again; on the local forge and on GitHub.

// The fake GitHub of github_pipeline.rs, loaded here too: that module keeps its copy private.
#[path = "../../stdlib/tests/support/fake_github.rs"]
#[allow(clippy::duplicate_mod)]
mod fake_github;

use std::collections::BTreeMap;
use std::path::PathBuf;

use fake_github::{FakeGithub, RunSeed};

use crate::support::{ActionsStep, Repo, files_under, root};

const KEY: &str = "0123456789abcdef0123456789abcdef-again-test";
/// The stages of examples/local.kdl that depend on `gather`. `restore` does not: it starts with
/// `gather` when two stages may run at once, and then finishes (it only reads).
const AFTER_GATHER: [&str; 4] = ["review", "scan", "seal", "post"];

struct Checkout {
    repo: Repo,
}

struct Out {
    code: i32,
    stderr: String,
}

impl Out {
    fn all(&self) -> String {
        format!("exit {}\n{}", self.code, self.stderr)
    }

    /// The run directory the run printed last.
    fn run_dir(&self) -> PathBuf {
        self.stderr
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("run directory: "))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no run directory: {}", self.all()))
    }

    fn manifest(&self) -> serde_json::Value {
        let bytes = std::fs::read(self.run_dir().join("manifest.json")).expect("manifest");
        serde_json::from_slice(&bytes).expect("json")
    }

    fn events(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.run_dir().join("events.jsonl"))
            .expect("events")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect()
    }
}

/// The repository's own methods (`path`, `git`, `commit`) on the checkout.
impl std::ops::Deref for Checkout {
    type Target = Repo;
    fn deref(&self) -> &Repo {
        &self.repo
    }
}

impl Checkout {
    /// A repository on `main` with two commits and examples/local.kdl.
    fn new() -> Self {
        Self {
            repo: Repo::local_example(),
        }
    }

    /// `reviewflow run examples/local.kdl ARGS…` with the conversation key.
    fn run(&self, args: &[&str]) -> Out {
        let out = crate::support::command()
            .args(["run", "examples/local.kdl"])
            .args(args)
            .current_dir(self.path())
            .env("REVIEW_CONVERSATION_KEY", KEY)
            .output()
            .expect("the binary runs");
        Out {
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// Every file the local forge and store keep, with its bytes.
    fn published(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        ["forge", "store"]
            .iter()
            .flat_map(|d| files_under(&self.path().join(".reviewflow").join(d)))
            .map(|p| {
                let bytes = std::fs::read(&p).expect("read");
                (p, bytes)
            })
            .collect()
    }

    fn posted(&self) -> serde_json::Value {
        let bytes = std::fs::read(
            self.path()
                .join(".reviewflow/forge/branch-main/local-review/posted.json"),
        )
        .expect("a posted review");
        serde_json::from_slice(&bytes).expect("json")
    }
}

/// The stop line, as the console prints it once.
fn stop_line(head: &str) -> String {
    format!(
        "■ gather stopped the run: the head {} was already reviewed: nothing new since — to run it anyway: reviewflow run --force",
        &head[..12]
    )
}

#[test]
fn another_pipeline_on_the_same_head_keeps_its_own_record() {
    let c = Checkout::new();
    let first = c.run(&[]);
    assert_eq!(first.code, 0, "{}", first.all());
    let head = c.head();
    let mine = c.path().join(".reviewflow/forge/branch-main/local-review");
    let md = std::fs::read(mine.join("review.md")).expect("local-review's review");
    // The same pipeline under another name, written beside it: a second pipeline of the repository.
    let text = std::fs::read_to_string(c.path().join("examples/local.kdl")).expect("example");
    let other = text.replacen(
        "pipeline \"local-review\"",
        "pipeline \"second-opinion\"",
        1,
    );
    assert_ne!(other, text);
    std::fs::write(c.path().join("examples/other.kdl"), other).expect("write");
    let out = crate::support::command()
        .args(["run", "examples/other.kdl"])
        .current_dir(c.path())
        .env("REVIEW_CONVERSATION_KEY", KEY)
        .output()
        .expect("the binary runs");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{log}");
    // It never reviewed this head: it reviews it, and does not stop on the other's record.
    assert!(!log.contains("was already reviewed"), "{log}");
    assert!(log.contains("✓ post"), "{log}");
    // Its own folder, beside the first pipeline's.
    let mut folders: Vec<String> =
        std::fs::read_dir(c.path().join(".reviewflow/forge/branch-main"))
            .expect("the change's folder")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
    folders.sort();
    assert_eq!(folders, ["local-review", "second-opinion"]);
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            c.path()
                .join(".reviewflow/forge/branch-main/second-opinion/posted.json"),
        )
        .expect("its record"),
    )
    .expect("json");
    assert_eq!(record["head"], head.as_str());
    // The first pipeline's review is untouched, and it still stops on its own record.
    assert_eq!(
        std::fs::read(mine.join("review.md")).expect("still there"),
        md
    );
    let again = c.run(&[]);
    assert_eq!(again.code, 0, "{}", again.all());
    assert!(again.all().contains(&stop_line(&head)), "{}", again.all());
}

#[test]
fn a_second_run_on_the_same_head_stops_and_posts_nothing() {
    let c = Checkout::new();
    let first = c.run(&[]);
    assert_eq!(first.code, 0, "{}", first.all());
    let head = c.head();
    assert_eq!(c.posted()["head"], head.as_str());
    let published = c.published();
    assert!(!published.is_empty());

    let second = c.run(&[]);
    let log = second.all();
    assert_eq!(second.code, 0, "{log}");
    assert_eq!(
        log.matches(&stop_line(&head)).count(),
        1,
        "said once: {log}"
    );
    assert_eq!(
        log.matches("was already reviewed").count(),
        1,
        "not also as gather's note: {log}"
    );
    assert!(log.contains("✓ gather"), "{log}");
    for stage in AFTER_GATHER {
        assert!(
            log.contains(&format!("· {stage}: not run — `gather` stopped the run\n")),
            "{stage}: {log}"
        );
        assert!(
            !log.contains(&format!("▶ {stage}")),
            "{stage} started: {log}"
        );
    }
    assert_eq!(c.published(), published, "nothing posted or kept again");

    let manifest = second.manifest();
    assert_eq!(manifest["status"], "succeeded");
    assert_eq!(manifest["exit_code"], 0);
    let reason = format!(
        "the head {} was already reviewed: nothing new since",
        &head[..12]
    );
    assert_eq!(manifest["stopped"]["stage"], "gather");
    assert_eq!(manifest["stopped"]["reason"], reason.as_str());
    assert_eq!(
        manifest["reason"],
        format!("`gather` stopped the run: {reason}").as_str()
    );
    for s in manifest["stages"].as_array().expect("stages") {
        let (name, outcome) = (s["name"].as_str().unwrap_or(""), &s["outcome"]);
        if name == "gather" {
            assert_eq!(outcome, "succeeded");
            assert_eq!(s["outputs"]["head"]["type"], "text", "{s}");
        } else if name == "restore" && outcome == "succeeded" {
            assert!(log.contains("✓ restore"), "{log}");
        } else {
            assert_eq!(outcome, "not-run", "{name}");
            assert_eq!(s["reason"], "`gather` stopped the run", "{name}");
        }
    }
    let events = second.events();
    let stop: Vec<_> = events.iter().filter(|e| e["event"] == "stop").collect();
    assert_eq!(stop.len(), 1, "{events:#?}");
    assert_eq!(stop[0]["stage"], "gather");
    assert_eq!(stop[0]["reason"], reason.as_str());
    let started: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "stage_start")
        .map(|e| e["stage"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        started == ["gather"] || started == ["gather", "restore"],
        "{started:?}"
    );
    let end = events.last().expect("events");
    assert_eq!(end["event"], "run_end");
    assert_eq!(end["exit_code"], 0);
    validate("manifest.schema.json", &manifest);
    for e in &events {
        validate("events.schema.json", e);
    }
}

/// `value` against schema/`name`.
fn validate(name: &str, value: &serde_json::Value) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema").join(name)).expect("schema"),
    )
    .expect("json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{value:#}");
}

#[test]
fn force_reviews_and_posts_again() {
    let c = Checkout::new();
    let first = c.run(&[]);
    assert_eq!(first.code, 0, "{}", first.all());
    let run1 = c.posted()["run_id"].clone();

    let forced = c.run(&["--force"]);
    let log = forced.all();
    assert_eq!(forced.code, 0, "{log}");
    let short = &c.head()[..12];
    assert!(
        log.contains(&format!(
            "gather: the head {short} was already reviewed: nothing new since; --force: the run goes on"
        )),
        "{log}"
    );
    assert!(
        log.contains("since-last-review: the whole diff is used (--force)"),
        "{log}"
    );
    assert!(!log.contains("stopped the run"), "{log}");
    assert!(log.contains("✓ post"), "{log}");
    assert_ne!(c.posted()["run_id"], run1, "posted again");
    let manifest = forced.manifest();
    assert_eq!(manifest["status"], "succeeded");
    assert!(manifest.get("stopped").is_none(), "{manifest:#}");
    assert!(
        manifest["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .all(|s| s["outcome"] != "not-run"),
        "{manifest:#}"
    );
}

#[test]
fn a_new_commit_is_reviewed() {
    let c = Checkout::new();
    assert_eq!(c.run(&[]).code, 0);
    c.commit("src/more.rs", "pub fn g() {}\n", "third");
    let next = c.run(&[]);
    let log = next.all();
    assert_eq!(next.code, 0, "{log}");
    assert!(!log.contains("stopped the run"), "{log}");
    assert!(log.contains("✓ post"), "{log}");
    assert_eq!(c.posted()["head"], c.head().as_str());
}

/// A resume of a stopped run runs `gather` again, which stops again on the same head.
#[test]
fn a_resumed_stopped_run_decides_again() {
    let c = Checkout::new();
    assert_eq!(c.run(&[]).code, 0);
    let stopped = c.run(&[]);
    assert_eq!(stopped.code, 0, "{}", stopped.all());
    let id = stopped.manifest()["run_id"]
        .as_str()
        .expect("run id")
        .to_string();
    let resumed = c.run(&["--resume", &id]);
    let log = resumed.all();
    assert_eq!(resumed.code, 0, "{log}");
    assert!(
        log.contains(&format!(
            "gather: not reused: it stopped run {id}; it decides again"
        )),
        "{log}"
    );
    assert!(log.contains(&stop_line(&c.head())), "{log}");
    assert_eq!(resumed.manifest()["parent"], id.as_str());
}

// GitHub: the same stop when the pull request's head is the one the review comment names.

const TOKEN: &str = "ghs_FakeInstallationTokenForTheAgainTest0123";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
const PR: u64 = 7;

fn diff() -> String {
    "diff --git a/projects/web/app.py b/projects/web/app.py\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/projects/web/app.py\n@@ -0,0 +1,2 @@\n+def main():\n+    return 1\n".into()
}

/// One job of the workflow running examples/review.kdl with the `rules` reviewer.
/// Its exit code, its log, and its step summary.
async fn github_job(fake: &FakeGithub, run_id: u64, args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |sub: &str| dir.path().join(sub);
    for sub in ["checkout/examples", "temp"] {
        std::fs::create_dir_all(path(sub)).expect("mkdir");
    }
    let pipeline = std::fs::read_to_string(root().join("examples/review.kdl"))
        .expect("the pipeline")
        .replace("    reviewer \"claude\"\n", "    reviewer \"rules\"\n")
        .lines()
        // The rules reviewer spends nothing: a budget on it is refused.
        .filter(|l| !l.trim_start().starts_with("budget "))
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    std::fs::write(path("checkout/examples/review.kdl"), pipeline).expect("write");
    std::fs::write(
        path("event.json"),
        format!(r#"{{"action":"synchronize","number":{PR},"pull_request":{{"number":{PR}}}}}"#),
    )
    .expect("event");
    let mut cmd = crate::support::command();
    let step = ActionsStep {
        api_url: &fake.api_url(),
        repository: &FakeGithub::repository(),
        event_name: "pull_request_target",
        event_path: &path("event.json"),
        run_id,
        temp: &path("temp"),
    };
    step.environment(&mut cmd)
        .args(["run", "examples/review.kdl"])
        .args(args)
        .current_dir(path("checkout"))
        .env("GITHUB_OUTPUT", path("github_output"))
        .env("GITHUB_STEP_SUMMARY", path("summary.md"))
        .env("GITHUB_TOKEN", TOKEN)
        .env(
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-fake-again-test-0123456789",
        )
        .env("REVIEW_CONVERSATION_KEY", KEY)
        .env("PROJECT", "web");
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the binary runs");
    let summary = std::fs::read_to_string(path("summary.md")).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        summary,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_github_a_second_run_on_the_same_head_stops_and_posts_nothing() {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD, BASE);
    fake.set_compare(BASE, HEAD, "ahead");
    fake.set_compare_diff(BASE, HEAD, &diff());
    fake.add_workflow_run(RunSeed::trusted(100, BASE));
    let (code, log, _) = github_job(&fake, 100, &[]).await;
    assert_eq!(code, 0, "{log}");
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(fake.check_runs().len(), 1);

    fake.add_workflow_run(RunSeed::trusted(101, BASE));
    let writes = fake.writes().len();
    let (code, log, summary) = github_job(&fake, 101, &[]).await;
    assert_eq!(code, 0, "{log}");
    assert_eq!(log.matches(&stop_line(HEAD)).count(), 1, "said once: {log}");
    assert_eq!(fake.writes().len(), writes, "nothing written: {log}");
    assert_eq!(fake.comments(PR), comments, "the comment is unchanged");
    assert_eq!(fake.check_runs().len(), 1, "no check run: not a review");
    assert!(
        summary.contains("`gather` stopped the run: the head 222222222222 was already reviewed"),
        "{summary}"
    );
    // Forced: reviewed and posted again, the comment updated in place.
    fake.add_workflow_run(RunSeed::trusted(102, BASE));
    let (code, log, _) = github_job(&fake, 102, &["--force"]).await;
    assert_eq!(code, 0, "{log}");
    assert!(!log.contains("stopped the run"), "{log}");
    assert_eq!(fake.comments(PR).len(), 1);
    assert_eq!(fake.check_runs().len(), 2, "{log}");
}

/// Without `since-last-review`, and with a gate that would now halt: the head was reviewed by
/// the first pipeline, so the second stops (exit 0) instead of halting (exit 1).
#[test]
fn the_stop_needs_no_since_last_review_and_comes_before_the_gate() {
    let c = Checkout::new();
    assert_eq!(c.run(&[]).code, 0);
    let pipeline = std::fs::read_to_string(c.path().join("examples/local.kdl"))
        .expect("read")
        .replace(
            "    since-last-review\n    gate warn=\"red\"",
            "    gate halt=\"green\"",
        )
        .replace(" \"gather.since-last-review\"", "");
    assert!(!pipeline.contains("since-last-review"), "{pipeline}");
    std::fs::write(c.path().join("examples/local.kdl"), pipeline).expect("write");
    let out = c.run(&[]);
    let log = out.all();
    assert_eq!(out.code, 0, "{log}");
    assert!(log.contains(&stop_line(&c.head())), "{log}");
    assert!(!log.contains("halt"), "{log}");
}
