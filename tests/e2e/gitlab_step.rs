//! One job of a GitLab review pipeline, against the fake GitLab of
//! `stdlib/tests/support/fake_gitlab.rs`: the pipeline in a folder of its own, GitLab's
//! variables, the token, and nothing else of the test's environment.

#[path = "../../stdlib/tests/support/fake_gitlab.rs"]
#[allow(clippy::duplicate_mod)]
pub(crate) mod fake_gitlab;

use fake_gitlab::FakeGitlab;

use crate::support::Run;

pub(crate) const TOKEN: &str = "glpat-FakeProjectTokenForTheStepTests1";
pub(crate) const MR: u64 = 7;

/// `reviewflow run review.kdl ARGS` with `pipeline` on merge request [`MR`], the variables
/// `extra` added (a pipeline's and a job's ids).
pub(crate) async fn run(
    fake: &FakeGitlab,
    pipeline: &str,
    args: &[&str],
    extra: &[(&str, &str)],
) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("review.kdl"), pipeline).expect("write the pipeline");
    let mut cmd = crate::support::command();
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("NO_COLOR", "1")
        .env("CI_API_V4_URL", fake.api_url())
        .env("CI_PROJECT_ID", "42")
        .env("CI_PROJECT_PATH", "acme/widgets")
        .env("CI_MERGE_REQUEST_IID", MR.to_string())
        .env("REVIEW_GITLAB_TOKEN", TOKEN)
        .args(["run", "review.kdl"])
        .args(args)
        .current_dir(dir.path());
    for (k, v) in extra {
        cmd.env(k, v);
    }
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

/// The review of merge request [`MR`] with the `rules` reviewer (its stage's `when` given by
/// `when`), a note, and a commit status.
pub(crate) fn pipeline(when: &str) -> String {
    format!(
        r#"pipeline "gitlab-review"
forge "gitlab" token="gitlab-token" timeout="2s" retries=1
secret "gitlab-token" env="REVIEW_GITLAB_TOKEN" {{
    visible-to "gather" "post"
}}
stage "gather" uses="std/gather"
stage "review" uses="std/review"{when} {{
    reviewer "rules"
    untrusted "gather.diff"
}}
stage "post" uses="std/post" {{
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    check-run "gitlab-review"
}}
"#
    )
}

/// The fake GitLab with merge request [`MR`] from `base` to `head`, whose one file has a TODO.
pub(crate) async fn seeded(base: &str, head: &str) -> FakeGitlab {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.add_merge_request(fake_gitlab::MrSeed::new(MR, base, head));
    let mut file = fake_gitlab::diff_file(
        "app.py",
        "app.py",
        "@@ -0,0 +1,3 @@\n+def main():\n+    # TODO: handle errors\n+    return 1\n",
    );
    file["new_file"] = serde_json::json!(true);
    fake.add_diff_value(MR, file);
    fake
}

/// The notes the token's account wrote.
pub(crate) fn our_notes(fake: &FakeGitlab) -> Vec<serde_json::Value> {
    fake.notes(MR)
        .into_iter()
        .filter(|n| n["author"]["username"] == fake_gitlab::BOT)
        .collect()
}
