//! `reviewflow run examples/review.kdl` as a GitHub Actions job runs it, against a fake GitHub
//! that answers with GitHub's real shapes (see `stdlib/tests/support/fake_github.rs`). The
//! workflow's `actions/upload-artifact` step is played by the test: it zips what the run named in
//! `GITHUB_OUTPUT` and adds it as an artifact of the run.

#[path = "../../stdlib/tests/support/fake_github.rs"]
mod fake_github;

use std::path::PathBuf;

use fake_github::{FakeGithub, Host, RouteKind, RunSeed, timestamp, zip_of};

use crate::support::{ActionsStep, files_under, root};

const TOKEN: &str = "ghs_FakeInstallationTokenForTheTestsOnly0123";
const KEY: &str = "0123456789abcdef0123456789abcdef-github-test";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD1: &str = "2222222222222222222222222222222222222222";
const HEAD2: &str = "3333333333333333333333333333333333333333";
const PR: u64 = 7;
const ARTIFACT: &str = "enroll-review-7-web";

/// The change of push 1: a file of the `web` project, with a TODO the rules reviewer reports.
/// The model's credential, a secret of the run like the forge token.
const MODEL_KEY: &str = "sk-ant-api03-fake-github-pipeline-key-0123456789";

fn diff1() -> String {
    file_diff(
        "projects/web/app.py",
        &["def main():", "    # TODO: handle errors", "    return 1"],
    )
}

/// Push 2 adds a second file.
fn diff2() -> String {
    file_diff("projects/web/util.py", &["def helper():", "    return 2"])
}

fn file_diff(path: &str, lines: &[&str]) -> String {
    let mut d = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for l in lines {
        d.push_str(&format!("+{l}\n"));
    }
    d
}

/// One job of the workflow: its folders and the environment Actions gives the step.
struct Job {
    dir: tempfile::TempDir,
    run_id: u64,
}

/// `examples/review.kdl` with `edit` applied to its text.
fn pipeline(edit: impl Fn(String) -> String) -> String {
    let text = std::fs::read_to_string(root().join("examples/review.kdl")).expect("the pipeline");
    edit(text)
}

/// The pipeline with the built-in `rules` reviewer instead of Claude Code, for tests that count
/// the findings it reports (a TODO is one).
fn rules_reviewer(text: String) -> String {
    let edited = text
        .replace("    reviewer \"claude\"\n", "    reviewer \"rules\"\n")
        .lines()
        // The rules reviewer spends nothing: a budget on it is refused.
        .filter(|l| !l.trim_start().starts_with("budget "))
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    assert_ne!(
        edited, text,
        "the reviewer line is where the test expects it"
    );
    edited
}

/// Calls that fail give up fast in tests: one retry, a 1 s timeout.
fn fast(text: String) -> String {
    let edited = text.replace(
        "forge \"github\" token=\"github-token\"",
        "forge \"github\" token=\"github-token\" timeout=\"1s\" retries=1",
    );
    assert_ne!(edited, text, "the forge line is where the test expects it");
    edited
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    /// `GITHUB_OUTPUT` as the run left it.
    outputs: String,
}

impl Outcome {
    fn log(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    fn output(&self, name: &str) -> Option<String> {
        // Multi-line form: `name<<DELIM\nvalue\nDELIM`.
        let mut lines = self.outputs.lines();
        while let Some(line) = lines.next() {
            if let Some(delim) = line.strip_prefix(&format!("{name}<<")) {
                let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delim).collect();
                return Some(value.join("\n"));
            }
            if let Some(v) = line.strip_prefix(&format!("{name}=")) {
                return Some(v.to_string());
            }
        }
        None
    }
}

impl Job {
    fn new(run_id: u64) -> Self {
        Self::for_pull_request(run_id, PR, &pipeline(|t| t))
    }

    fn for_pull_request(run_id: u64, pr: u64, pipeline: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["checkout/examples", "temp"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::write(dir.path().join("checkout/examples/review.kdl"), pipeline)
            .expect("write the pipeline");
        std::fs::write(
            dir.path().join("event.json"),
            format!(r#"{{"action":"synchronize","number":{pr},"pull_request":{{"number":{pr}}}}}"#),
        )
        .expect("event");
        Self { dir, run_id }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    async fn run(&self, fake: &FakeGithub, extra: &[(&str, &str)]) -> Outcome {
        self.run_job(fake, &[], extra, &[]).await
    }

    /// One job of an exported workflow: `args` after the pipeline's name, `extra` variables
    /// set, `absent` ones (another job's secrets) left out.
    async fn run_job(
        &self,
        fake: &FakeGithub,
        args: &[&str],
        extra: &[(&str, &str)],
        absent: &[&str],
    ) -> Outcome {
        let mut cmd = crate::support::command();
        let step = ActionsStep {
            api_url: &fake.api_url(),
            repository: &FakeGithub::repository(),
            event_name: "pull_request_target",
            event_path: &self.path("event.json"),
            run_id: self.run_id,
            temp: &self.path("temp"),
        };
        step.environment(&mut cmd)
            .args(["run", "examples/review.kdl"])
            .args(args)
            .current_dir(self.path("checkout"))
            // The fake `claude` of tests/fakes stands in for Claude Code.
            .env("PATH", {
                let mut path = std::ffi::OsString::from(root().join("tests/fakes"));
                path.push(":");
                path.push(std::env::var_os("PATH").unwrap_or_default());
                path
            })
            .env("ANTHROPIC_API_KEY", MODEL_KEY)
            .env("GITHUB_OUTPUT", self.path("github_output"))
            .env("GITHUB_STEP_SUMMARY", self.path("summary.md"))
            .env("GITHUB_TOKEN", TOKEN)
            .env("REVIEW_CONVERSATION_KEY", KEY)
            .env("PROJECT", "web");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        for k in absent {
            cmd.env_remove(k);
        }
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .expect("join")
            .expect("the binary runs");
        Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            outputs: std::fs::read_to_string(self.path("github_output")).unwrap_or_default(),
        }
    }

    /// The workflow's upload-artifact step: the folder the run named, zipped, kept as an
    /// artifact of this run.
    fn upload(&self, fake: &FakeGithub, out: &Outcome, created: u64) -> u64 {
        let name = out.output("artifact-name").expect("artifact-name");
        // upload-artifact zips a file at the archive's root, under its own name.
        let file = PathBuf::from(out.output("artifact-path").expect("artifact-path"));
        let bytes = std::fs::read(&file).expect("read");
        let file_name = file.file_name().and_then(|n| n.to_str()).expect("name");
        fake.add_artifact(
            &name,
            self.run_id,
            zip_of(file_name, &bytes),
            &timestamp(created),
        )
    }
}

/// The token is only ever printed inside `::add-mask::`, never kept in a file of the job, and
/// never sent to the blob host.
fn assert_token_kept_secret(job: &Job, out: &Outcome, fake: &FakeGithub) {
    // The forge token and the model's credential: masked in the log, written nowhere.
    for secret in [TOKEN, MODEL_KEY] {
        for line in out.stdout.lines().chain(out.stderr.lines()) {
            assert!(
                !line.contains(secret) || line.starts_with("::add-mask::"),
                "a secret in a log line: {line}"
            );
        }
        for path in files_under(job.dir.path()) {
            let bytes = std::fs::read(&path).unwrap_or_default();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "a secret in {}",
                path.display()
            );
        }
        let published = format!(
            "{:?}{:?}{:?}",
            fake.comments(PR),
            fake.check_runs(),
            fake.reviews()
        );
        assert!(!published.contains(secret), "a secret published on GitHub");
    }
    assert!(
        !fake.authorization_seen(Host::Blob),
        "the blob host saw a token"
    );
}

fn seed_first_push(fake: &FakeGithub) {
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD1, BASE);
    fake.set_compare(BASE, HEAD1, "ahead");
    fake.set_compare_diff(BASE, HEAD1, &diff1());
    fake.add_workflow_run(RunSeed::trusted(100, BASE));
}

fn marker_head(body: &str) -> Option<String> {
    let first = body.lines().next()?;
    first
        .split_whitespace()
        .find_map(|w| w.strip_prefix("head="))
        .map(str::to_string)
}

/// The `conversation=` of a comment's marker: the blob id of the sealed conversation it names.
fn marker_conversation(body: &str) -> Option<String> {
    let first = body.lines().next()?;
    first
        .split_whitespace()
        .find_map(|w| w.strip_prefix("conversation="))
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pushes_resume_the_review_and_update_one_comment() {
    let fake = FakeGithub::start().await;
    seed_first_push(&fake);

    // Push 1: a fresh review.
    let job1 = Job::new(100);
    let out1 = job1.run(&fake, &[]).await;
    assert_eq!(out1.code, 0, "{}", out1.log());
    let log1 = out1.log();
    assert!(log1.contains("fresh review"), "{log1}");
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = comments[0]["body"].as_str().unwrap_or_default().to_string();
    assert_eq!(marker_head(&body).as_deref(), Some(HEAD1), "{body}");
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["head_sha"], HEAD1);
    // The name is a template: one check run per project.
    assert_eq!(runs[0]["name"], "enroll-review-web");
    assert_eq!(
        runs[0]["conclusion"], "success",
        "a TODO is a warning: {runs:?}"
    );
    assert_token_kept_secret(&job1, &out1, &fake);
    job1.upload(&fake, &out1, 1_000);

    // Push 2: the head moves; the review resumes the sealed conversation of push 1.
    fake.set_head(PR, HEAD2);
    fake.set_compare(BASE, HEAD2, "ahead");
    fake.set_compare_diff(BASE, HEAD2, &format!("{}{}", diff1(), diff2()));
    fake.set_compare(HEAD1, HEAD2, "ahead");
    fake.set_compare_diff(HEAD1, HEAD2, &diff2());
    fake.add_workflow_run(RunSeed::trusted(101, BASE));
    let before = fake.api_calls();
    let job2 = Job::new(101);
    let out2 = job2.run(&fake, &[]).await;
    let calls = fake.api_calls() - before;
    let log2 = out2.log();
    assert_eq!(out2.code, 0, "{log2}");
    assert!(log2.contains("restored conversation"), "{log2}");
    assert!(log2.contains("reviewed (try 1, resumed)"), "{log2}");
    let comments = fake.comments(PR);
    assert_eq!(
        comments.len(),
        1,
        "updated in place, never duplicated: {comments:?}"
    );
    let body = comments[0]["body"].as_str().unwrap_or_default().to_string();
    assert_eq!(marker_head(&body).as_deref(), Some(HEAD2), "{body}");
    assert!(
        body.contains("resumed review; it saw 1 earlier turn"),
        "Claude Code continued its conversation: {body}"
    );
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 2, "one check run per head: {runs:?}");
    assert_eq!(runs[1]["head_sha"], HEAD2);
    assert_eq!(fake.count(RouteKind::ArtifactZip), 1, "one download");
    assert_token_kept_secret(&job2, &out2, &fake);
    job2.upload(&fake, &out2, 2_000);
    // The figure the documentation quotes.
    println!("API calls of the second push: {calls}");
    assert!(calls < 15, "{calls} API calls for a second push");
}

/// Push 1 of pull request 7, reviewed and kept: the comment names HEAD1, the artifact of run
/// 100 holds its conversation.
async fn first_push(fake: &FakeGithub) {
    seed_first_push(fake);
    let job = Job::new(100);
    let out = job.run(fake, &[]).await;
    assert_eq!(out.code, 0, "{}", out.log());
    assert_eq!(out.output("artifact-name").as_deref(), Some(ARTIFACT));
    job.upload(fake, &out, 1_000);
}

/// The pull request's head moves to `head` (a descendant of `from`); run `run_id` will review it.
fn push(fake: &FakeGithub, from: &str, head: &str, run_id: u64) {
    fake.set_head(PR, head);
    fake.set_compare(BASE, head, "ahead");
    fake.set_compare_diff(BASE, head, &format!("{}{}", diff1(), diff2()));
    fake.set_compare(from, head, "ahead");
    fake.set_compare_diff(from, head, &diff2());
    fake.add_workflow_run(RunSeed::trusted(run_id, BASE));
}

/// Lines of the log that say `restore: fresh review — …`.
fn fresh_lines(out: &Outcome) -> Vec<String> {
    out.stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("restore: fresh review"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_planted_artifacts_costs_one_download() {
    let fake = FakeGithub::start().await;
    first_push(&fake).await;
    // 1,000 artifacts under the pull request's name, all newer than the trusted one: 900 from
    // 900 fork runs, 100 from three of the repository's own `pull_request` runs.
    for i in 0..1_000u64 {
        let run = if i < 900 { 5_000 + i } else { 9_000 + i % 3 };
        if i < 900 {
            fake.add_workflow_run(RunSeed::fork_pull_request(run, HEAD2));
        } else {
            fake.add_workflow_run(RunSeed::branch_pull_request(run, "feature", HEAD2));
        }
        fake.add_artifact(
            ARTIFACT,
            run,
            zip_of("conversation.sealed", b"planted"),
            &timestamp(2_000 + i),
        );
    }
    push(&fake, HEAD1, HEAD2, 101);
    let logged = fake.requests().len();
    let (calls, zips, lookups) = (
        fake.api_calls(),
        fake.count(RouteKind::ArtifactZip),
        fake.count(RouteKind::WorkflowRun),
    );
    let out = Job::new(101).run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 0, "{log}");
    assert!(log.contains("restored conversation"), "{log}");
    let zips = fake.count(RouteKind::ArtifactZip) - zips;
    let lookups = fake.count(RouteKind::WorkflowRun) - lookups;
    let calls = fake.api_calls() - calls;
    assert_eq!(zips, 1, "exactly one download");
    assert_eq!(
        fake.blob_requests().len(),
        1,
        "one blob fetch: push 1 was fresh"
    );
    assert!(lookups <= 50, "{lookups} run look-ups");
    assert!(
        log.contains("1000 blobs from untrusted producers skipped")
            && !log.contains("skipped artifact"),
        "untrusted artifacts are counted in one line, not narrated: {log}"
    );
    println!("flood of 1,000: {calls} API calls, {lookups} run look-ups, {zips} download");
    // docs/github.md gives this count for a runner that sets GITHUB_REPOSITORY_ID.
    let made: Vec<String> = fake.requests()[logged..]
        .iter()
        .filter(|r| r.host == Host::Api)
        .map(|r| format!("{} {}", r.method, r.path_and_query))
        .collect();
    assert_eq!(
        calls, 26,
        "the flood's cost docs/github.md gives: {made:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_sealed_for_another_pull_request_does_not_open() {
    let fake = FakeGithub::start().await;
    first_push(&fake).await;
    // Pull request 8 has a review of its own; someone replays pull request 7's sealed
    // conversation under its name, from a trusted run.
    let head8 = "8888888888888888888888888888888888888888";
    fake.add_pull_request(8, head8, BASE);
    fake.set_compare(BASE, head8, "ahead");
    fake.set_compare_diff(BASE, head8, &diff2());
    // Pull request 8's marker names those very bytes (their blob id is pull request 7's), so
    // restore fetches them: it is the binding that refuses them.
    let replayed = marker_conversation(fake.comments(PR)[0]["body"].as_str().unwrap_or_default())
        .expect("pull request 7's review names its conversation");
    assert!(replayed.starts_with("blob-"), "{replayed}");
    fake.add_issue_comment(
        8,
        &format!(
            "<!-- reviewflow:v1 pipeline=enroll-review project=web head={head8} run=r-8 conversation={replayed} -->\nearlier review"
        ),
        "github-actions[bot]",
        "Bot",
    );
    fake.add_workflow_run(RunSeed::trusted(102, BASE));
    let job = Job::for_pull_request(102, 8, &pipeline(|t| t));
    // The bytes of pull request 7's artifact, under pull request 8's name.
    let sealed = fake
        .artifact_zip_bytes(ARTIFACT)
        .expect("pull request 7's artifact");
    fake.add_artifact("enroll-review-8-web", 102, sealed, &timestamp(5_000));
    let out = job.run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 0, "{log}");
    assert!(
        log.contains("does not open with this key and binding"),
        "{log}"
    );
    assert_eq!(fresh_lines(&out).len(), 1, "{log}");
    assert!(!log.contains("restored conversation"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_failures_during_restore_give_a_fresh_review() {
    type Fault = fn(&FakeGithub);
    let cases: [(&str, Fault); 5] = [
        ("500s on the listing", |f| {
            f.fail_next(RouteKind::ListArtifacts, 10, 500)
        }),
        ("garbage JSON", |f| {
            f.garbage_json(RouteKind::ListArtifacts, true)
        }),
        ("a timeout", |f| {
            f.delay(RouteKind::ListArtifacts, std::time::Duration::from_secs(3))
        }),
        ("a redirect loop", |f| f.redirect_loop(true)),
        ("a truncated zip", |f| {
            let id = f.artifact_ids(ARTIFACT)[0];
            f.truncate_zip(id);
        }),
    ];
    for (what, fault) in cases {
        let fake = FakeGithub::start().await;
        first_push(&fake).await;
        push(&fake, HEAD1, HEAD2, 101);
        fault(&fake);
        let out = Job::for_pull_request(101, PR, &pipeline(fast))
            .run(&fake, &[])
            .await;
        let log = out.log();
        assert_eq!(out.code, 0, "{what}: {log}");
        let fresh = fresh_lines(&out);
        assert_eq!(fresh.len(), 1, "{what}: the reason once: {log}");
        assert!(!log.contains("restored conversation"), "{what}: {log}");
        // The review still ran and was posted.
        let comments = fake.comments(PR);
        assert_eq!(comments.len(), 1, "{what}");
        let body = comments[0]["body"].as_str().unwrap_or_default();
        assert_eq!(marker_head(body).as_deref(), Some(HEAD2), "{what}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_post_fails_the_run_and_a_newer_unposted_conversation_is_skipped() {
    let fake = FakeGithub::start().await;
    first_push(&fake).await;
    push(&fake, HEAD1, HEAD2, 101);
    fake.fail_next(RouteKind::UpdateComment, 1, 500);
    let job2 = Job::for_pull_request(101, PR, &pipeline(fast));
    let out2 = job2.run(&fake, &[]).await;
    let log2 = out2.log();
    assert_eq!(out2.code, 1, "{log2}");
    assert!(log2.contains("cannot update the review comment"), "{log2}");
    // Nothing half-posted: the comment still names push 1, no check run for push 2.
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1);
    let body = comments[0]["body"].as_str().unwrap_or_default();
    assert_eq!(marker_head(body).as_deref(), Some(HEAD1), "{body}");
    assert_eq!(
        fake.check_runs().len(),
        1,
        "no check run for a review that was not posted"
    );

    // The workflow still uploads what the run kept: a conversation of a review nobody saw. The
    // next push must skip it and resume the posted review of push 1.
    job2.upload(&fake, &out2, 2_000);
    let head3 = "4444444444444444444444444444444444444444";
    push(&fake, HEAD2, head3, 102);
    fake.set_compare(HEAD1, head3, "ahead");
    fake.set_compare_diff(HEAD1, head3, &diff2());
    let out3 = Job::new(102).run(&fake, &[]).await;
    let log3 = out3.log();
    assert_eq!(out3.code, 0, "{log3}");
    assert!(
        log3.contains("it is not the blob the posted review names"),
        "{log3}"
    );
    assert!(log3.contains("restored conversation"), "{log3}");
    let body = fake.comments(PR)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(marker_head(&body).as_deref(), Some(head3), "{body}");
}

/// The `if:` of the exported post job's step that keeps the sealed conversation.
fn exported_keep_condition() -> String {
    let text = std::fs::read_to_string(root().join("examples/github/review.export.yml"))
        .expect("the exported workflow");
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).expect("YAML");
    docs[0]["jobs"]["post"]["steps"]
        .as_vec()
        .expect("the post job's steps")
        .iter()
        .find(|s| s["name"].as_str() == Some("Keep the sealed conversation"))
        .and_then(|s| s["if"].as_str())
        .expect("the keep step has an `if:`")
        .to_owned()
}

/// Whether a step of condition `cond` runs after the run step failed, leaving `out`'s outputs,
/// as GitHub judges it: without a status function the condition holds only when every step
/// before succeeded (`success() && …`).
fn runs_after_a_failed_run(cond: &str, out: &Outcome) -> bool {
    let Some(rest) = cond.strip_prefix("always() && ") else {
        return false;
    };
    assert_eq!(rest, "steps.run.outputs.artifact-name != ''", "{cond}");
    out.output("artifact-name")
        .is_some_and(|name| !name.is_empty())
}

/// The comment is updated, then the check run fails: the marker already names the new
/// conversation, so the exported workflow keeps it whatever the run's exit, and the next push
/// resumes it rather than reviewing fresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_posted_review_keeps_its_conversation() {
    let fake = FakeGithub::start().await;
    first_push(&fake).await;
    push(&fake, HEAD1, HEAD2, 101);
    fake.fail_next(RouteKind::CreateCheckRun, 1, 500);
    let job2 = Job::for_pull_request(101, PR, &pipeline(fast));
    let out2 = job2.run(&fake, &[]).await;
    let log2 = out2.log();
    assert_eq!(out2.code, 1, "{log2}");
    let body = fake.comments(PR)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        marker_head(&body).as_deref(),
        Some(HEAD2),
        "half-posted: {body}"
    );
    assert_ne!(marker_conversation(&body).as_deref(), Some("-"), "{body}");
    let keep = exported_keep_condition();
    assert!(
        runs_after_a_failed_run(&keep, &out2),
        "the export's keep step (`if: {keep}`) is skipped after a failed run: {log2}"
    );
    job2.upload(&fake, &out2, 2_000);

    let head3 = "4444444444444444444444444444444444444444";
    push(&fake, HEAD2, head3, 102);
    let out3 = Job::new(102).run(&fake, &[]).await;
    let log3 = out3.log();
    assert_eq!(out3.code, 0, "{log3}");
    assert!(log3.contains("restored conversation"), "{log3}");
    assert!(fresh_lines(&out3).is_empty(), "{log3}");
}

/// A push lands after the run opened the pull request (the second read, post's, sees it): the
/// run of `pipeline` (`examples/review.kdl` when `None`) fails, and posts and keeps nothing.
async fn a_push_after_the_run_opened_posts_and_keeps_nothing(pipeline: Option<&str>) {
    let fake = FakeGithub::start().await;
    first_push(&fake).await;
    push(&fake, HEAD1, HEAD2, 101);
    fake.push_after(PR, 1, "5555555555555555555555555555555555555555");
    let job = match pipeline {
        Some(text) => Job::for_pull_request(101, PR, text),
        None => Job::new(101),
    };
    let out = job.run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 1, "{log}");
    assert!(log.contains("head moved"), "{log}");
    assert_eq!(out.output("artifact-name"), None, "nothing kept: {log}");
    let body = fake.comments(PR)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(marker_head(&body).as_deref(), Some(HEAD1), "{body}");
    assert_eq!(fake.check_runs().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_head_moving_before_post_posts_and_keeps_nothing() {
    a_push_after_the_run_opened_posts_and_keeps_nothing(None).await;
}

/// Without `require-head`, post still requires the head the run read when it opened the forge,
/// which is the head `std/gather` reviewed on GitHub (docs/language.md): a push since then posts
/// and keeps nothing either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_require_head_post_still_requires_the_gathered_head() {
    let text = pipeline(|t| {
        let edited = fast(t).replace("    require-head \"gather.head\"\n", "");
        assert!(!edited.contains("require-head"), "{edited}");
        edited
    });
    a_push_after_the_run_opened_posts_and_keeps_nothing(Some(&text)).await;
}

/// The token's scope is enforced when the run uses the forge, not only proved by `check`: a
/// stage outside it is refused the forge even when the finding is allowed (restore falls back to
/// a fresh review).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_outside_the_tokens_scope_is_refused_the_forge() {
    let fake = FakeGithub::start().await;
    first_push(&fake).await;
    push(&fake, HEAD1, HEAD2, 101);
    let text = pipeline(|t| {
        let edited = t.replace(
            "visible-to \"gather\" \"restore\" \"post\"",
            "visible-to \"gather\" \"post\"",
        );
        let edited = edited.replace(
            "    from \"conversations\"\n",
            "    from \"conversations\"\n    allow \"secret-scope\" reason=\"testing the run-time scope\"\n",
        );
        assert_ne!(edited, t);
        crate::support::with_allow_ids(&edited)
    });
    let out = Job::for_pull_request(101, PR, &text).run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 0, "{log}");
    assert!(
        log.contains("needs the forge's token `github-token`, which is not in this stage's scope"),
        "{log}"
    );
    assert!(!log.contains("restored conversation"), "{log}");
    assert_eq!(
        fake.count(RouteKind::ArtifactZip),
        0,
        "restore read nothing"
    );
}

/// A force-push that dropped the last reviewed head: the whole diff is reviewed, said once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_force_push_the_whole_diff_is_reviewed() {
    let fake = FakeGithub::start().await;
    first_push(&fake).await;
    push(&fake, HEAD1, HEAD2, 101);
    fake.set_compare(HEAD1, HEAD2, "diverged");
    let out = Job::new(101).run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 0, "{log}");
    let notes = out
        .stdout
        .lines()
        .filter(|l| l.contains("is no longer an ancestor of the head"))
        .count();
    assert_eq!(notes, 1, "{log}");
    assert_eq!(
        fake.count(RouteKind::CompareDiff),
        2,
        "push 1's diff and push 2's whole diff, no since-last-review diff"
    );
}

/// 120 findings: the check run carries them in batches of 50 (one create, two updates), and
/// `inline "added"` puts each on its line in one pull-request review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_findings_go_in_batches_of_50_and_inline() {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    let lines: Vec<String> = (0..120).map(|i| format!("x = {i}  # TODO: {i}")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    fake.add_pull_request(PR, HEAD1, BASE);
    fake.set_compare(BASE, HEAD1, "ahead");
    fake.set_compare_diff(BASE, HEAD1, &file_diff("projects/web/todo.py", &lines));
    fake.add_workflow_run(RunSeed::trusted(100, BASE));
    let text = rules_reviewer(pipeline(|t| {
        let edited = t.replace(
            "    check-run \"enroll-review-{project}\"\n",
            "    check-run \"enroll-review-{project}\"\n    inline \"added\"\n",
        );
        assert_ne!(edited, t);
        edited
    }));
    let out = Job::for_pull_request(100, PR, &text).run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 0, "{log}");
    assert_eq!(fake.count(RouteKind::CreateCheckRun), 1);
    assert_eq!(fake.count(RouteKind::UpdateCheckRun), 2, "{log}");
    for r in fake.requests() {
        if matches!(
            r.kind,
            RouteKind::CreateCheckRun | RouteKind::UpdateCheckRun
        ) {
            assert_eq!(r.method == "POST", r.kind == RouteKind::CreateCheckRun);
        }
    }
    let runs = fake.check_runs();
    let annotations = runs[0]["output"]["annotations_count"].as_u64();
    assert_eq!(annotations, Some(120), "{runs:?}");
    let reviews = fake.reviews();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let comments = reviews[0]["comments"].as_array().map_or(0, Vec::len);
    assert_eq!(comments, 120, "{reviews:?}");
}

/// `examples/review.kdl` with `lines` added to the post stage, after `require-head`.
fn post_with(lines: &str) -> String {
    pipeline(|t| {
        let edited = t.replace(
            "    require-head \"gather.head\"\n",
            &format!("    require-head \"gather.head\"\n{lines}"),
        );
        assert_ne!(edited, t, "the post stage is where the test expects it");
        edited
    })
}

/// A head authored by someone else than `require-author` names: the run fails naming the
/// precondition and who authored it, and GitHub sees no write at all (no comment, no check run,
/// no inline review) and the workflow gets nothing to upload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_author_of_another_account_posts_and_keeps_nothing() {
    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    fake.set_commit_author(HEAD1, Some("octocat"), "User");
    let text = post_with("    require-author \"reviewflow[bot]\"\n    inline \"added\"\n");
    let job = Job::for_pull_request(100, PR, &text);
    let out = job.run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 1, "{log}");
    assert!(
        log.contains(
            "`require-author`: the head 222222222222 is authored by octocat, not by reviewflow[bot]: nothing published"
        ),
        "{log}"
    );
    let writes = fake.writes();
    assert!(writes.is_empty(), "no POST or PATCH: {writes:?}");
    assert!(fake.comments(PR).is_empty());
    assert!(fake.check_runs().is_empty());
    assert!(fake.reviews().is_empty());
    assert_eq!(out.output("artifact-name"), None, "nothing kept: {log}");
    assert_eq!(fake.count(RouteKind::Commit), 1, "{log}");
}

/// The head a bot published passes `require-author "reviewflow[bot]"`; with `block-on "any"`
/// the one `info` finding (a TODO) fails the check run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_authored_head_is_posted_and_block_on_any_fails_on_an_info_finding() {
    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    fake.set_commit_author(HEAD1, Some("reviewflow[bot]"), "Bot");
    let text = rules_reviewer(post_with(
        "    require-author \"github-actions[bot]\"\n    require-author \"reviewflow[bot]\"\n    block-on \"any\"\n",
    ));
    let job = Job::for_pull_request(100, PR, &text);
    let out = job.run(&fake, &[]).await;
    let log = out.log();
    assert_eq!(out.code, 0, "{log}");
    assert_eq!(fake.comments(PR).len(), 1, "{log}");
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["head_sha"], HEAD1);
    assert_eq!(runs[0]["conclusion"], "failure", "{runs:?}");
    assert_eq!(
        runs[0]["output"]["title"], "Reviewed: 1 blocking finding of 1",
        "{runs:?}"
    );
    assert!(
        runs[0]["output"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("any finding blocks (block-on: any)")),
        "{runs:?}"
    );
    assert_eq!(out.output("artifact-name").as_deref(), Some(ARTIFACT));
}

/// The same login as a user account does not pass a `[bot]` name: anyone can register
/// `reviewflow-bot`, but only GitHub makes `reviewflow[bot]` a Bot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_account_does_not_pass_a_bot_name_and_a_commit_without_account_never_passes() {
    for (login, kind, found) in [
        (
            Some("reviewflow[bot]"),
            "User",
            "the user account reviewflow[bot]",
        ),
        (
            None,
            "User",
            "\"Mona Lisa\", whose email maps to no GitHub account",
        ),
    ] {
        let fake = FakeGithub::start().await;
        seed_first_push(&fake);
        fake.set_commit_author(HEAD1, login, kind);
        let text = post_with("    require-author \"reviewflow[bot]\"\n");
        let out = Job::for_pull_request(100, PR, &text).run(&fake, &[]).await;
        let log = out.log();
        assert_eq!(out.code, 1, "{log}");
        assert!(
            log.contains(&format!("the head 222222222222 is authored by {found}")),
            "{log}"
        );
        assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    }
}

/// `examples/runner-check.kdl` (seed 003): Codex reviews a head a bot published, and the check
/// run is written; a head another account authored gets nothing written; Claude in Codex's place
/// is caught by `check`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_check_example_publishes_only_when_its_preconditions_hold() {
    let text = std::fs::read_to_string(root().join("examples/runner-check.kdl")).expect("example");
    let openai = [("OPENAI_API_KEY", "sk-proj-fake-runner-check-0123456789")];

    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    fake.set_commit_author(HEAD1, Some("quest-runner[bot]"), "Bot");
    let job = Job::for_pull_request(100, PR, &text);
    let out = job.run(&fake, &openai).await;
    let log = out.log();
    assert_eq!(out.code, 0, "{log}");
    assert!(log.contains("reviewed (try 1, fresh)"), "{log}");
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["name"], "quest review");
    assert_eq!(runs[0]["head_sha"], HEAD1);
    assert_eq!(fake.comments(PR).len(), 1, "the review comment");

    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    fake.set_commit_author(HEAD1, Some("octocat"), "User");
    let out = Job::for_pull_request(100, PR, &text)
        .run(&fake, &openai)
        .await;
    let log = out.log();
    assert_ne!(out.code, 0, "{log}");
    assert!(log.contains("not by quest-runner[bot]"), "{log}");
    assert!(
        fake.writes().is_empty(),
        "nothing written: {:?}",
        fake.writes()
    );

    let same_vendor = text.replace("reviewer \"codex\"", "reviewer \"claude\"");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("runner-check.kdl"), same_vendor).expect("write");
    let check = crate::support::reviewflow_in(dir.path(), &["check", "runner-check.kdl"]);
    assert_eq!(check.code, 1, "{}", check.transcript());
    assert!(
        check.stdout.contains("reviewer-vendor") || check.stderr.contains("reviewer-vendor"),
        "{}",
        check.transcript()
    );
}

/// The comment's body without what names the run (`run=` in the marker, the run in the text)
/// or its sealed conversation (`conversation=`: a fresh nonce each time it is sealed).
fn without_run(body: &str) -> String {
    body.split_whitespace()
        .map(|w| {
            if w.starts_with("run=") {
                "run=…"
            } else if w.starts_with("conversation=") {
                "conversation=…"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        .split("run `")
        .map(|part| part.split_once('`').map_or(part, |(_, rest)| rest))
        .collect::<Vec<_>>()
        .join("run `…`")
}

/// The `--stages` of each job of the exported review workflow, in its order.
fn exported_jobs() -> Vec<String> {
    let workflow = std::fs::read_to_string(root().join("examples/github/review.export.yml"))
        .expect("the exported workflow");
    workflow
        .lines()
        .filter_map(|l| {
            l.trim().strip_prefix(
                "run: sudo -E env \"PATH=$PATH\" reviewflow run examples/review.kdl --stages ",
            )
        })
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exported_jobs_one_after_another_post_the_review_of_one_run() {
    let jobs = exported_jobs();
    assert_eq!(
        jobs,
        ["gather,restore,review,scan,seal", "post"],
        "the export changed"
    );

    // One run, as the single-job workflow does it.
    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    let text = pipeline(rules_reviewer);
    let whole = Job::for_pull_request(100, PR, &text);
    let out = whole.run(&fake, &[]).await;
    assert_eq!(out.code, 0, "{}", out.log());
    let whole_body = fake.comments(PR)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let whole_runs = fake.check_runs();

    // The same push through the exported jobs, each on a machine of its own: the first job's
    // run directory is handed to the second as its artifact would be.
    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    let first = Job::for_pull_request(100, PR, &text);
    let runs_dir = first.path("temp/reviewflow-runs");
    let runs_arg = runs_dir.to_str().expect("utf-8").to_owned();
    let out1 = first
        .run_job(
            &fake,
            &["--stages", &jobs[0], "--run-dir", &runs_arg],
            &[],
            &[],
        )
        .await;
    assert_eq!(out1.code, 0, "{}", out1.log());
    assert!(fake.comments(PR).is_empty(), "the first job posted");
    let id = out1.output("run-id").expect("run-id in GITHUB_OUTPUT");

    let second = Job::for_pull_request(100, PR, &text);
    let handed = second.path("temp/reviewflow-runs");
    artifact_hand_over(&runs_dir.join(&id), &handed.join(&id));
    // The resume is handed the modes a download writes, not the run's own.
    let mode = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
    };
    assert_eq!(mode(&runs_dir.join(&id)), 0o700);
    assert_eq!(mode(&handed.join(&id)), 0o755);
    assert_eq!(mode(&handed.join(&id).join("manifest.json")), 0o644);
    let handed_arg = handed.to_str().expect("utf-8").to_owned();
    // The posting job holds neither the conversation key nor the model's key.
    let out2 = second
        .run_job(
            &fake,
            &[
                "--stages",
                &jobs[1],
                "--run-dir",
                &handed_arg,
                "--resume",
                &id,
            ],
            &[],
            &["REVIEW_CONVERSATION_KEY", "ANTHROPIC_API_KEY"],
        )
        .await;
    assert_eq!(out2.code, 0, "{}", out2.log());
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let split_body = comments[0]["body"].as_str().unwrap_or_default().to_owned();
    assert_eq!(without_run(&split_body), without_run(&whole_body));
    assert!(whole_body.contains("## Findings (1)"), "{whole_body}");
    let split_runs = fake.check_runs();
    assert_eq!(split_runs.len(), 1);
    assert_eq!(split_runs[0]["conclusion"], whole_runs[0]["conclusion"]);
    assert_eq!(
        out2.output("artifact-name").as_deref(),
        Some(ARTIFACT),
        "the posting job keeps the sealed conversation: {}",
        out2.outputs
    );

    // A hand-over from a run of another pull request is refused before anything is posted.
    let other = Job::for_pull_request(101, 8, &text);
    fake.add_pull_request(8, HEAD1, BASE);
    fake.add_workflow_run(RunSeed::trusted(101, BASE));
    let other_dir = other.path("temp/reviewflow-runs");
    let other_arg = other_dir.to_str().expect("utf-8").to_owned();
    let out3 = other
        .run_job(
            &fake,
            &["--stages", &jobs[0], "--run-dir", &other_arg],
            &[],
            &[],
        )
        .await;
    assert_eq!(out3.code, 0, "{}", out3.log());
    let other_id = out3.output("run-id").expect("run-id");
    let tampered = Job::for_pull_request(102, PR, &text);
    let into = tampered.path("temp/reviewflow-runs");
    artifact_hand_over(&other_dir.join(&other_id), &into.join(&other_id));
    let into_arg = into.to_str().expect("utf-8").to_owned();
    let before = fake.comments(PR);
    let out4 = tampered
        .run_job(
            &fake,
            &[
                "--stages",
                &jobs[1],
                "--run-dir",
                &into_arg,
                "--resume",
                &other_id,
            ],
            &[],
            &["REVIEW_CONVERSATION_KEY", "ANTHROPIC_API_KEY"],
        )
        .await;
    assert_eq!(out4.code, 2, "{}", out4.log());
    assert!(
        out4.stderr.contains("it did not review the same thing"),
        "{}",
        out4.log()
    );
    assert_eq!(fake.comments(PR), before, "nothing posted");
}

/// Hands the run directory `from` to `to` as the exported workflow's two steps do: the
/// directory uploaded by `actions/upload-artifact` v4.6.2 (`path:` the directory,
/// `include-hidden-files` as the export sets it, `false` by default) and downloaded by
/// `actions/download-artifact` v4.3.0 (one artifact by `name:`, `path:` the same directory in the
/// next job). What they do, read in their sources at those commits:
///
/// - upload walks the directory with `@actions/glob` 0.5.0 (upload-artifact
///   `src/shared/search.ts`; toolkit `packages/glob/src/internal-globber.ts`): links followed (a
///   link to a file is zipped as the file's contents, a link to a folder walked, a broken link
///   left out), every entry whose own name starts with `.` skipped with all beneath it (the
///   uploaded folder itself too), folders dropped from what is zipped: a folder holding no file
///   is not in the artifact (toolkit `packages/artifact`, 2.3.2: `upload-zip-specification.ts`,
///   `zip.ts`);
/// - download (download-artifact `src/download-artifact.ts`; toolkit `packages/artifact`
///   `download-artifact.ts`) extracts the zip straight into `path` (no folder of the artifact's
///   name), creating it and its parents; `unzip-stream` 0.3.1 (`lib/extract.js`) writes each
///   file with `fs.createWriteStream` (mode 0666 less the umask) and its folders with `mkdirp`
///   (0777 less the umask), ignoring the modes and times in the zip: each file has the time it
///   was written, and the modes the runner's umask leaves (not in these sources; the test takes
///   022, Ubuntu's default: 0644 files in 0755 folders).
///
/// A special file (a FIFO, a socket, a device) is not filtered by upload, which would read it as
/// a file: a run directory never holds one, and the test fails if it does.
fn artifact_hand_over(from: &std::path::Path, to: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let hidden = hidden_files_handed_over();
    let name = from
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    assert!(
        hidden || !name.starts_with('.'),
        "upload-artifact skips a hidden path whole: nothing to upload at {}",
        from.display()
    );
    let mut files = Vec::new();
    uploaded_files(
        from,
        std::path::Path::new(""),
        hidden,
        &mut Vec::new(),
        &mut files,
    );
    assert!(
        !files.is_empty(),
        "`if-no-files-found: error` fails the upload of {}",
        from.display()
    );
    for (rel, bytes) in files {
        let dest = to.join(&rel);
        let parent = dest.parent().expect("a file has a folder");
        // mkdirp: 0777 less the umask, for each folder it creates.
        let mut missing = Vec::new();
        let mut at = parent;
        while !at.exists() {
            missing.push(at.to_path_buf());
            at = at.parent().expect("the filesystem's root exists");
        }
        std::fs::create_dir_all(parent).expect("mkdir");
        for dir in missing {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        // createWriteStream truncates a file already there, with a fresh mtime.
        std::fs::write(&dest, bytes).expect("write");
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
}

/// Whether the exported workflow's hand-over uploads hidden files (`include-hidden-files: true`
/// on the step that uploads the run directory; upload-artifact's default is `false`).
fn hidden_files_handed_over() -> bool {
    let workflow = std::fs::read_to_string(root().join("examples/github/review.export.yml"))
        .expect("the exported workflow");
    let step = workflow
        .split("- name: ")
        .find(|s| s.contains("uses: actions/upload-artifact@") && s.contains("reviewflow-runs"))
        .expect("the step that uploads the run directory");
    step.lines()
        .any(|l| l.trim() == "include-hidden-files: true")
}

/// The files upload-artifact zips under `dir` (`rel` in the artifact), with their contents:
/// links followed (`chain`: the real folders above, for `@actions/glob`'s cycle check), broken
/// links and hidden names left out, folders not entries of their own.
fn uploaded_files(
    dir: &std::path::Path,
    rel: &std::path::Path,
    hidden: bool,
    chain: &mut Vec<PathBuf>,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) {
    let real = std::fs::canonicalize(dir).expect("realpath");
    if chain.contains(&real) {
        return;
    }
    chain.push(real);
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry"))
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        if !hidden && name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = entry.path();
        // `stat`, not `lstat`: links are followed, and a broken one is omitted.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let rel = rel.join(&name);
        if meta.is_dir() {
            uploaded_files(&path, &rel, hidden, chain, out);
        } else {
            assert!(
                meta.is_file(),
                "{} is a special file: upload-artifact would try to read it",
                path.display()
            );
            out.push((rel, std::fs::read(&path).expect("read")));
        }
    }
    chain.pop();
}

/// A pipeline whose first job keeps a folder output (`report`, holding the folders `empty` and
/// `empty/deeper` and nothing else there, and `hidden` files when asked) and an empty folder
/// output (`none`); the second job reads them.
fn folder_pipeline(hidden: bool) -> String {
    let hidden = if hidden {
        " && echo dot > report/.keep && mkdir report/.cache && echo dot > report/.cache/x"
    } else {
        ""
    };
    format!(
        r#"pipeline "handover"
stage "make" uses="run" {{
    command "sh" "-c" "cd \"$REVIEWFLOW_WORK_DIR\" && mkdir -p report/notes report/empty/deeper none && echo kept > report/notes/a.txt{hidden}"
    output "report" file="report" type="file"
    output "none" file="none" type="file"
}}
stage "show" uses="run" {{
    command "sh" "-c" "cat \"$1/notes/a.txt\" && test -d \"$1/empty/deeper\" && test -d \"$2\" && echo seen" "sh" "{{make.report}}" "{{make.none}}"
    output "said"
}}
"#
    )
}

/// A machine of its own: the checkout `repo` (its name is the run's repository) holding the
/// pipeline `p.kdl`.
fn folder_checkout(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("repo")).expect("mkdir");
    std::fs::write(dir.path().join("repo/p.kdl"), text).expect("write");
    dir
}

/// `reviewflow run p.kdl ARGS` in `dir`, a job of its own: the run id it printed, and the run.
fn folder_job(dir: &std::path::Path, args: &[&str]) -> (Option<String>, crate::support::Run) {
    let mut all = vec!["run", "p.kdl"];
    all.extend_from_slice(args);
    let run = crate::support::reviewflow_in(dir, &all);
    let id = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("run directory: "))
        .and_then(|p| {
            std::path::Path::new(p)
                .file_name()?
                .to_str()
                .map(str::to_owned)
        });
    (id, run)
}

/// Folder outputs cross from one job to the next as the workflow's artifact steps hand them
/// over: the empty folders upload-artifact leaves out are made again from the parent's manifest
/// (an empty folder output too), and the stage is reused. A hidden file crosses because the
/// export's upload includes hidden files.
#[test]
fn folder_outputs_cross_the_artifact_hand_over_with_their_empty_folders() {
    // Without `include-hidden-files: true` a hidden file in a folder output would be left out,
    // and the next job would refuse the folder (its digest no longer matches).
    assert!(
        hidden_files_handed_over(),
        "the export's hand-over uploads hidden files"
    );
    for hidden in [false, true] {
        let text = folder_pipeline(hidden);
        let first = folder_checkout(&text);
        let runs = first.path().join("runs");
        let runs_arg = runs.to_str().expect("utf-8");
        let (id, out1) = folder_job(
            &first.path().join("repo"),
            &["--stages", "make", "--run-dir", runs_arg],
        );
        assert_eq!(out1.code, 0, "{}", out1.transcript());
        let id = id.expect("a run id");
        let kept = runs.join(&id).join("outputs/make");
        assert!(kept.join("report/empty/deeper").is_dir() && kept.join("none").is_dir());

        let second = folder_checkout(&text);
        let handed = second.path().join("runs");
        artifact_hand_over(&runs.join(&id), &handed.join(&id));
        assert!(
            !handed.join(&id).join("outputs/make/report/empty").exists()
                && !handed.join(&id).join("outputs/make/none").exists(),
            "upload-artifact leaves empty folders out"
        );
        let handed_arg = handed.to_str().expect("utf-8");
        let (_, out2) = folder_job(
            &second.path().join("repo"),
            &["--stages", "show", "--run-dir", handed_arg, "--resume", &id],
        );
        // The child's output is on the run's stderr (`show │ seen`).
        let seen = out2.stderr.contains("show │ seen");
        assert_eq!(out2.code, 0, "{}", out2.transcript());
        assert!(seen, "{}", out2.transcript());
        assert!(
            out2.stderr.contains("↺ make: reused"),
            "{}",
            out2.transcript()
        );
    }
}

/// `std/gather`'s `base` chooses a local change's revisions; on GitHub the pull request is the
/// change, so the setting is refused rather than ignored: by `check` (`run-refusal`), and by the
/// forge when it opens if that finding is allowed. Nothing is asked of GitHub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gather_base_on_github_is_refused_not_ignored() {
    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    let with_base = |allow: bool| {
        pipeline(|t| {
            let line = if allow {
                "    base \"origin/release\"\n    allow \"run-refusal\" reason=\"testing the forge's own refusal\"\n"
            } else {
                "    base \"origin/release\"\n"
            };
            let edited = t.replacen(
                "stage \"gather\" uses=\"std/gather\" {\n",
                &format!("stage \"gather\" uses=\"std/gather\" {{\n{line}"),
                1,
            );
            assert_ne!(edited, t, "the gather stage is where the test expects it");
            crate::support::with_allow_ids(&edited)
        })
    };
    for allow in [false, true] {
        let out = Job::for_pull_request(100, PR, &with_base(allow))
            .run(&fake, &[])
            .await;
        let log = out.log();
        assert_eq!(out.code, 2, "{log}");
        assert!(
            log.contains("`gather` names its `base`, but on GitHub"),
            "{log}"
        );
        assert!(fake.requests().is_empty(), "{log}");
    }
    // The command line's revisions are the local forge's too.
    for flag in ["--base", "--head"] {
        let out = Job::new(100)
            .run_job(&fake, &[flag, "origin/release"], &[], &[])
            .await;
        let log = out.log();
        assert_eq!(out.code, 2, "{log}");
        assert!(
            log.contains(&format!(
                "`{flag}` chooses the revisions of a change on the local forge"
            )),
            "{log}"
        );
        assert!(fake.requests().is_empty(), "{log}");
    }
}

/// A folder output holding a name GitHub's artifact upload refuses is refused when it is kept,
/// in a run on a person's machine too (docs/export.md): the rule is the GitHub platform's
/// registration, applied by the engine to every run.
#[test]
fn a_folder_output_github_could_not_hand_over_is_refused_in_any_run() {
    let text = r#"pipeline "handover"
stage "make" uses="run" {
    command "sh" "-c" "cd \"$REVIEWFLOW_WORK_DIR\" && mkdir -p report && echo x > 'report/a:b'"
    output "report" file="report" type="file"
}
"#;
    let dir = folder_checkout(text);
    let (_, out) = folder_job(&dir.path().join("repo"), &[]);
    assert_ne!(out.code, 0, "{}", out.transcript());
    assert!(
        out.stderr.contains(
            "cannot keep output `report`: the folder holds \"a:b\", a name GitHub's artifact \
             upload refuses (it may hold none of `\" : < > | * ?`, CR or LF)"
        ),
        "{}",
        out.transcript()
    );
}

/// `examples/review.kdl` with its review gated on drafts (docs/github.md, "Drafts"): a draft is
/// skipped with a neutral check run and no comment, and reviewed once marked ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_gated_on_drafts_skips_a_draft_and_reviews_it_once_ready() {
    let gated = |text: String| {
        let edited = text.replace(
            "stage \"review\" uses=\"std/review\" timeout=\"45m\" on-error=\"fallback\" {",
            "stage \"review\" uses=\"std/review\" timeout=\"45m\" on-error=\"fallback\" when=\"!gather.draft\" {",
        );
        assert_ne!(
            edited, text,
            "the review stage is where the test expects it"
        );
        edited
    };
    let fake = FakeGithub::start().await;
    seed_first_push(&fake);
    fake.set_draft(PR, true);
    let draft = Job::for_pull_request(100, PR, &pipeline(gated))
        .run(&fake, &[])
        .await;
    let log = draft.log();
    assert_eq!(draft.code, 0, "{log}");
    assert!(fake.comments(PR).is_empty(), "{log}");
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["conclusion"], "neutral");
    assert!(
        runs[0]["output"]["title"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Not reviewed: the change is a draft"),
        "{runs:?}"
    );

    fake.set_draft(PR, false);
    fake.add_workflow_run(RunSeed::trusted(101, BASE));
    let ready = Job::for_pull_request(101, PR, &pipeline(gated))
        .run(&fake, &[])
        .await;
    let log = ready.log();
    assert_eq!(ready.code, 0, "{log}");
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{log}");
    let body = comments[0]["body"].as_str().unwrap_or_default();
    assert_eq!(marker_head(body).as_deref(), Some(HEAD1), "{body}");
    assert_eq!(fake.check_runs().len(), 2);
}
