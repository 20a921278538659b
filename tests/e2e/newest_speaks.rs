//! Only the newest run speaks (`docs/github.md`, "Only the newest run posts"): against the fake
//! GitHub and the fake GitLab, a re-run of an older run that posts after a newer one is refused
//! and leaves the newer review as it was, and a newer attempt of the same run replaces the
//! older attempt's review.

use crate::fail_on_github::fake_github::FakeGithub;
use crate::fail_on_github::{PR, RULES, TOKEN, fake, pipeline};
use crate::support::{ActionsStep, Run};

const HEAD: &str = "2222222222222222222222222222222222222222";

/// The job's step of run `run_id`, attempt `attempt`: `reviewflow run pipeline.kdl --force` (the
/// head may already be reviewed: a re-run reviews it again and only the post decides).
async fn step(fake: &FakeGithub, run_id: u64, attempt: u32) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["checkout", "temp"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
    }
    std::fs::write(
        dir.path().join("checkout/pipeline.kdl"),
        pipeline(RULES, ""),
    )
    .expect("pipeline");
    let event = dir.path().join("event.json");
    std::fs::write(
        &event,
        format!(r#"{{"action":"synchronize","number":{PR},"pull_request":{{"number":{PR}}}}}"#),
    )
    .expect("event");
    let mut cmd = crate::support::command();
    let step = ActionsStep {
        api_url: &fake.api_url(),
        repository: &FakeGithub::repository(),
        event_name: "pull_request_target",
        event_path: &event,
        run_id,
        temp: &dir.path().join("temp"),
    };
    step.environment(&mut cmd)
        .args(["run", "pipeline.kdl", "--force"])
        .current_dir(dir.path().join("checkout"))
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_RUN_ATTEMPT", attempt.to_string());
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the binary runs");
    drop(dir);
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The one review comment's body.
fn comment(fake: &FakeGithub) -> String {
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "one review comment: {comments:?}");
    comments[0]["body"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_of_an_older_run_leaves_the_newer_review_alone() {
    let fake = fake().await;
    let newer = step(&fake, 501, 1).await;
    assert_eq!(newer.code, 0, "{}", newer.transcript());
    let body = comment(&fake);
    let marker = body.lines().next().unwrap_or_default().to_owned();
    assert!(marker.contains(&format!(" head={HEAD} ")), "{marker}");
    assert!(marker.ends_with(" order=501.1 -->"), "{marker}");
    let checks = fake.check_runs().len();

    // Run 500 started before 501 and is re-run (attempt 2) after 501 posted, on the same head.
    let older = step(&fake, 500, 2).await;
    let log = older.transcript();
    assert_eq!(
        older.code, 1,
        "the post fails, as for a head that moved: {log}"
    );
    assert!(
        log.contains(
            "the review posted for this head is by a newer run (run 501 attempt 1; this is run 500 attempt 2): nothing was posted, and that review stands"
        ),
        "{log}"
    );
    assert_eq!(comment(&fake), body, "the newer comment is unchanged");
    assert_eq!(
        fake.check_runs().len(),
        checks,
        "no check run over the newer one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_attempt_replaces_the_older_attempts_review_and_not_the_reverse() {
    let fake = fake().await;
    let first = step(&fake, 600, 1).await;
    assert_eq!(first.code, 0, "{}", first.transcript());
    assert!(
        comment(&fake)
            .lines()
            .next()
            .unwrap_or_default()
            .ends_with(" order=600.1 -->")
    );

    let second = step(&fake, 600, 2).await;
    assert_eq!(second.code, 0, "{}", second.transcript());
    let body = comment(&fake);
    assert!(
        body.lines()
            .next()
            .unwrap_or_default()
            .ends_with(" order=600.2 -->"),
        "the second attempt's review replaced the first's: {body}"
    );

    // The first attempt's job, late: it would replace a newer attempt's review.
    let late = step(&fake, 600, 1).await;
    let log = late.transcript();
    assert_eq!(late.code, 1, "{log}");
    assert!(
        log.contains(
            "is by a newer attempt of this run (run 600 attempt 2; this is run 600 attempt 1)"
        ),
        "{log}"
    );
    assert_eq!(comment(&fake), body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_without_a_run_order_is_replaced() {
    let fake = fake().await;
    // A review posted before run orders were kept: the marker ends with its counts.
    let old = format!(
        "<!-- reviewflow:v1 pipeline=gh-fail-on project=- head={HEAD} run=20261201T000000Z-00000000 conversation=- findings=0.0.0 new=0.0.0 -->\nold review"
    );
    fake.add_issue_comment(PR, &old, "github-actions[bot]", "Bot");
    let out = step(&fake, 700, 1).await;
    assert_eq!(out.code, 0, "{}", out.transcript());
    let body = comment(&fake);
    assert!(
        body.lines()
            .next()
            .unwrap_or_default()
            .ends_with(" order=700.1 -->"),
        "{body}"
    );
}

/// A job of GitLab pipeline `pipeline`, job `job`.
async fn gitlab_job(
    fake: &crate::gitlab_step::fake_gitlab::FakeGitlab,
    pipeline: u64,
    job: u64,
) -> Run {
    let (pipeline, job) = (pipeline.to_string(), job.to_string());
    crate::gitlab_step::run(
        fake,
        &crate::gitlab_step::pipeline(""),
        &["--force"],
        &[("CI_PIPELINE_ID", &pipeline), ("CI_JOB_ID", &job)],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_gitlab_an_older_pipeline_is_refused_and_a_retried_job_replaces() {
    use crate::gitlab_step::{our_notes, seeded};
    let fake = seeded(&"1".repeat(40), HEAD).await;
    let newer = gitlab_job(&fake, 81, 9001).await;
    assert_eq!(newer.code, 0, "{}", newer.transcript());
    let notes = our_notes(&fake);
    assert_eq!(notes.len(), 1);
    let body = notes[0]["body"].as_str().unwrap_or_default().to_owned();
    assert!(
        body.lines()
            .next()
            .unwrap_or_default()
            .ends_with(" order=81.9001 -->"),
        "{body}"
    );
    let statuses = fake.statuses().len();

    // A retry of a job of the older pipeline 80 (a new, larger job id) after 81 posted.
    let older = gitlab_job(&fake, 80, 9002).await;
    let log = older.transcript();
    assert_eq!(older.code, 1, "{log}");
    assert!(
        log.contains("is by a newer run (run 81 attempt 9001; this is run 80 attempt 9002)"),
        "{log}"
    );
    assert_eq!(
        our_notes(&fake)[0]["body"].as_str().unwrap_or_default(),
        body
    );
    assert_eq!(
        fake.statuses().len(),
        statuses,
        "no commit status over the newer one"
    );

    // The newer pipeline's post job retried: a larger job id replaces its review.
    let retried = gitlab_job(&fake, 81, 9003).await;
    assert_eq!(retried.code, 0, "{}", retried.transcript());
    let notes = our_notes(&fake);
    assert_eq!(notes.len(), 1, "updated in place");
    let first = notes[0]["body"].as_str().unwrap_or_default();
    assert!(
        first
            .lines()
            .next()
            .unwrap_or_default()
            .ends_with(" order=81.9003 -->"),
        "{first}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_run_that_posts_during_this_one_still_stands() {
    let fake = fake().await;
    // Run 801 posts its review of the same head after run 800 read the comments (gather) and
    // before it writes: the write-time read finds it.
    let newer = format!(
        "<!-- reviewflow:v1 pipeline=gh-fail-on project=- head={HEAD} run=20261201T000000Z-00000001 conversation=- findings=0.0.0 new=0.0.0 order=801.1 -->\nthe newer review"
    );
    fake.comment_after(PR, 1, &newer, "github-actions[bot]", "Bot");
    let out = step(&fake, 800, 1).await;
    let log = out.transcript();
    assert_eq!(out.code, 1, "{log}");
    assert!(
        log.contains("is by a newer run (run 801 attempt 1; this is run 800 attempt 1)"),
        "{log}"
    );
    assert_eq!(comment(&fake), newer, "the newer comment is unchanged");
    assert!(
        fake.check_runs().is_empty(),
        "no check run over the newer one"
    );
}
