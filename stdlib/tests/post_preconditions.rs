//! What `std/post` requires before it writes anything (`require-head`, `require-author`), on
//! both forges: the local one against throw-away repositories, GitHub against the fake. The
//! stage runs [`check_preconditions`] before it keeps or posts anything; here it is called as
//! the stage calls it, and every refusal is checked to have written nothing to GitHub.
//! (`tests/e2e/github_pipeline.rs` runs the same through `reviewflow run`.)

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use reviewflow_stdlib::forge::CommitAuthor;
use reviewflow_stdlib::git::Sha;
use reviewflow_stdlib::kinds::forge::{Preconditions, check_preconditions};
use reviewflow_stdlib::kinds::forge_github::GithubKind;
use reviewflow_stdlib::kinds::forge_local::LocalKind;
use reviewflow_stdlib::kinds::{Forge, ForgeError, ForgeKind, ForgeOpen};
use support::fake_github::{FakeGithub, Fault, RouteKind};
use zeroize::Zeroizing;

const TOKEN: &str = "ghs_FAKEtoken0123456789abcdefABCDEF";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "1a2b3c4d5e6f1a2b3c4d5e6f1a2b3c4d5e6f1a2b";
const PR: u64 = 7;

fn sha(text: &str) -> Sha {
    Sha::parse(text).unwrap()
}

fn wanted(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

// --- the local forge -----------------------------------------------------------------------

/// A repository whose last commit is authored by `author`; returns its folder and that commit.
fn repo_by(author: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str], name: &str| {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
            .env("GIT_COMMITTER_NAME", "Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.invalid")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    git(&["init", "-q", "-b", "main"], author);
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    git(&["add", "-A"], author);
    git(&["commit", "-q", "-m", "first"], "Someone Else");
    std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
    git(&["add", "-A"], author);
    git(&["commit", "-q", "-m", "second"], author);
    let head = git(&["rev-parse", "HEAD"], author);
    (dir, head)
}

async fn open_local(checkout: &Path) -> Arc<dyn Forge> {
    let inputs = BTreeMap::new();
    let env = |_: &str| None;
    let open = ForgeOpen {
        decl: None,
        checkout,
        token: None,
        pipeline: "review",
        inputs: &inputs,
        env: &env,
        base: None,
        head: None,
        temp_dir: checkout.join(".reviewflow/tmp"),
        notes: BTreeMap::new(),
    };
    match LocalKind.open(&open).await {
        Ok(forge) => forge,
        Err(e) => panic!("the local forge opens: {e}"),
    }
}

#[tokio::test]
async fn local_require_author_matches_the_git_author_name_exactly() {
    let (dir, head) = repo_by("reviewflow[bot]");
    let forge = open_local(dir.path()).await;
    assert_eq!(
        forge.head_author(&sha(&head)).await.unwrap(),
        CommitAuthor::Git {
            name: "reviewflow[bot]".into()
        }
    );
    // One of several names is enough; locally a `[bot]` name is a name like any other.
    let ok = Preconditions {
        head: sha(&head),
        authors: wanted(&["someone", "reviewflow[bot]"]),
    };
    check_preconditions(forge.as_ref(), &ok).await.unwrap();
    // No names: no author is required.
    let none = Preconditions {
        head: sha(&head),
        authors: Vec::new(),
    };
    check_preconditions(forge.as_ref(), &none).await.unwrap();
}

#[tokio::test]
async fn local_require_author_refuses_another_author_naming_both() {
    let (dir, head) = repo_by("Mallory Example");
    let forge = open_local(dir.path()).await;
    for near in [
        "mallory example",
        "Mallory",
        "Mallory Example ",
        "reviewflow[bot]",
    ] {
        let p = Preconditions {
            head: sha(&head),
            authors: wanted(&[near]),
        };
        let err = check_preconditions(forge.as_ref(), &p).await.unwrap_err();
        assert!(matches!(err, ForgeError::AuthorRefused(_)), "{err:?}");
        let err = err.to_string();
        let expected = format!(
            "`require-author`: the head {} is authored by Mallory Example, not by {near}: nothing published",
            &head[..12]
        );
        assert_eq!(err, expected, "{near:?}");
    }
    let p = Preconditions {
        head: sha(&head),
        authors: wanted(&["reviewflow[bot]", "github-actions[bot]"]),
    };
    let err = check_preconditions(forge.as_ref(), &p)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not by any of reviewflow[bot], github-actions[bot]"),
        "{err}"
    );
}

/// The change can add a `.mailmap`; the author is read from the commit object, which it cannot
/// rewrite.
#[tokio::test]
async fn a_mailmap_in_the_change_does_not_rename_the_local_author() {
    let (dir, _) = repo_by("Mallory Example");
    std::fs::write(
        dir.path().join(".mailmap"),
        "reviewflow[bot] <author@example.invalid> Mallory Example <author@example.invalid>\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Mallory Example")
            .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
            .env("GIT_COMMITTER_NAME", "Mallory Example")
            .env("GIT_COMMITTER_EMAIL", "author@example.invalid")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    run(&["add", "-A"]);
    run(&["commit", "-q", "-m", "map me"]);
    let head = run(&["rev-parse", "HEAD"]);
    assert_eq!(
        run(&["log", "-1", "--format=%aN", &head]),
        "reviewflow[bot]",
        "git itself applies the mailmap"
    );
    let forge = open_local(dir.path()).await;
    let p = Preconditions {
        head: sha(&head),
        authors: wanted(&["reviewflow[bot]"]),
    };
    let err = check_preconditions(forge.as_ref(), &p).await.unwrap_err();
    let ForgeError::AuthorRefused(mismatch) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(mismatch.author, "Mallory Example");
}

#[tokio::test]
async fn local_require_head_is_checked_first() {
    let (dir, head) = repo_by("reviewflow[bot]");
    let forge = open_local(dir.path()).await;
    let other = "0".repeat(40);
    let p = Preconditions {
        head: sha(&other),
        authors: wanted(&["reviewflow[bot]"]),
    };
    let err = check_preconditions(forge.as_ref(), &p).await.unwrap_err();
    assert!(
        matches!(&err, ForgeError::HeadMoved { current, .. } if current.as_str() == head),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("the change's head moved since gather"),
        "{err}"
    );
    assert!(err.contains(&head[..12]), "{err}");
}

// --- GitHub --------------------------------------------------------------------------------

struct Github {
    fake: FakeGithub,
    forge: Arc<dyn Forge>,
    _dir: tempfile::TempDir,
}

async fn github() -> Github {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD, BASE);
    let dir = tempfile::tempdir().unwrap();
    let event = dir.path().join("event.json");
    std::fs::write(
        &event,
        format!(r#"{{"action":"synchronize","number":{PR},"pull_request":{{"number":{PR}}}}}"#),
    )
    .unwrap();
    let vars: BTreeMap<&str, String> = [
        ("GITHUB_API_URL", fake.api_url()),
        ("GITHUB_REPOSITORY", FakeGithub::repository()),
        ("GITHUB_EVENT_PATH", event.display().to_string()),
        ("GITHUB_RUN_ID", "100".to_owned()),
    ]
    .into_iter()
    .collect();
    let env = move |name: &str| vars.get(name).cloned();
    let inputs = BTreeMap::new();
    let open = ForgeOpen {
        decl: None,
        checkout: dir.path(),
        token: Some(Zeroizing::new(TOKEN.to_owned())),
        pipeline: "enroll-review",
        inputs: &inputs,
        env: &env,
        base: None,
        head: None,
        temp_dir: dir.path().join("temp"),
        notes: BTreeMap::new(),
    };
    let forge = match GithubKind.open(&open).await {
        Ok(forge) => forge,
        Err(e) => panic!("the github forge opens: {e}"),
    };
    Github {
        fake,
        forge,
        _dir: dir,
    }
}

impl Github {
    async fn check(&self, names: &[&str]) -> Result<(), ForgeError> {
        let p = Preconditions {
            head: sha(HEAD),
            authors: wanted(names),
        };
        let result = check_preconditions(self.forge.as_ref(), &p).await;
        assert!(
            self.fake.writes().is_empty(),
            "a precondition wrote to GitHub: {:?}",
            self.fake.writes()
        );
        result
    }
}

#[tokio::test]
async fn github_a_bot_author_passes_a_bot_name() {
    let gh = github().await;
    gh.fake
        .set_commit_author(HEAD, Some("reviewflow[bot]"), "Bot");
    assert_eq!(
        gh.forge.head_author(&sha(HEAD)).await.unwrap(),
        CommitAuthor::Account {
            login: "reviewflow[bot]".into(),
            is_bot: true,
            name: "reviewflow[bot]".into(),
        }
    );
    gh.check(&["reviewflow[bot]"]).await.unwrap();
    gh.check(&["github-actions[bot]", "reviewflow[bot]"])
        .await
        .unwrap();
    // The head check read the pull request again; the author check read the commit once each.
    assert_eq!(gh.fake.count(RouteKind::Commit), 3);
    let commit_reads: Vec<String> = gh
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.kind == RouteKind::Commit)
        .map(|r| r.path_and_query)
        .collect();
    assert!(
        commit_reads
            .iter()
            .all(|p| p == &format!("/repos/octo-org/octo-repo/commits/{HEAD}?per_page=1")),
        "{commit_reads:?}"
    );
}

#[tokio::test]
async fn github_a_user_with_a_bots_login_does_not_pass_a_bot_name() {
    let gh = github().await;
    gh.fake
        .set_commit_author(HEAD, Some("reviewflow[bot]"), "User");
    let err = gh.check(&["reviewflow[bot]"]).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "`require-author`: the head 1a2b3c4d5e6f is authored by the user account reviewflow[bot], \
         not by reviewflow[bot] (a bot name matches only a Bot account): nothing published"
    );
}

#[tokio::test]
async fn github_a_plain_name_matches_the_login_exactly() {
    let gh = github().await;
    gh.fake.set_commit_author(HEAD, Some("octocat"), "User");
    gh.check(&["octocat"]).await.unwrap();
    for near in ["Octocat", "octocat ", "octo"] {
        let err = gh.check(&[near]).await.unwrap_err().to_string();
        assert!(
            err.starts_with(
                "`require-author`: the head 1a2b3c4d5e6f is authored by octocat, not by"
            ),
            "{near:?}: {err}"
        );
    }
}

#[tokio::test]
async fn github_another_author_is_refused_and_nothing_is_written() {
    let gh = github().await;
    gh.fake.set_commit_author(HEAD, Some("octocat"), "User");
    let err = gh.check(&["reviewflow[bot]"]).await.unwrap_err();
    assert!(matches!(err, ForgeError::AuthorRefused(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "`require-author`: the head 1a2b3c4d5e6f is authored by octocat, not by reviewflow[bot]: nothing published"
    );
    assert!(gh.fake.comments(PR).is_empty());
    assert!(gh.fake.check_runs().is_empty());
}

#[tokio::test]
async fn github_a_commit_with_no_account_never_matches() {
    let gh = github().await;
    gh.fake.set_commit_author(HEAD, None, "User");
    assert_eq!(
        gh.forge.head_author(&sha(HEAD)).await.unwrap(),
        CommitAuthor::NoAccount {
            name: "Mona Lisa".into()
        }
    );
    // Not even by the git name it carries.
    let err = gh
        .check(&["Mona Lisa", "reviewflow[bot]"])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`require-author`: the head 1a2b3c4d5e6f is authored by \"Mona Lisa\", whose email maps to no GitHub account, \
         not by any of Mona Lisa, reviewflow[bot]: nothing published"
    );
}

#[tokio::test]
async fn github_an_unknown_head_commit_is_an_error_not_a_pass() {
    let gh = github().await;
    let err = gh.check(&["reviewflow[bot]"]).await.unwrap_err();
    // Not a refusal of the author: nothing vouches for one, and GitHub's answer is kept.
    let ForgeError::AuthorUnreadable { source, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(source.status(), Some(422));
    let err = err.to_string();
    assert!(
        err.starts_with("`require-author`: cannot read the head commit 1a2b3c4d5e6f"),
        "{err}"
    );
    assert!(err.contains("422"), "{err}");
    assert!(err.contains("No commit found for SHA"), "{err}");
    assert!(err.ends_with("nothing published"), "{err}");
}

#[tokio::test]
async fn github_no_names_reads_no_commit() {
    let gh = github().await;
    gh.check(&[]).await.unwrap();
    assert_eq!(gh.fake.count(RouteKind::Commit), 0);
}

#[tokio::test]
async fn github_a_token_refused_a_read_names_the_permission_it_lacks() {
    let gh = github().await;
    gh.fake
        .fault_next(RouteKind::PullRequest, 1, Fault::Status(403));
    let err = gh.forge.current_head().await.unwrap_err();
    assert!(matches!(err, ForgeError::Forbidden { .. }), "{err:?}");
    assert_eq!(err.capability(), Some("pull-requests:read"));
    assert!(
        err.to_string()
            .starts_with("cannot read pull request #7: GitHub answered 403"),
        "{err}"
    );
    // The author check says which read it could not make; it refuses, writing nothing.
    gh.fake.fault_next(RouteKind::Commit, 1, Fault::Status(403));
    let err = gh.check(&["reviewflow[bot]"]).await.unwrap_err();
    let ForgeError::AuthorUnreadable { source, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(source.capability(), Some("contents:read"));
    assert!(err.to_string().ends_with("nothing published"), "{err}");
}
