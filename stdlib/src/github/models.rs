//! The parts of GitHub's REST answers reviewflow reads. Our own structs, not octocrab's models:
//! GitHub sends `null` for many fields its documentation calls required (an artifact's
//! timestamps and `digest`, a deleted fork's `head.repo`, a run's `head_branch`), and a model
//! that refuses them refuses the whole listing. Every field that can be `null` is an `Option`,
//! and unknown fields are ignored.

use serde::{Deserialize, Serialize};

/// A user or bot as GitHub names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

/// `GET /repos/{o}/{r}/commits/{ref}`, the parts read: who authored the commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub sha: String,
    pub commit: CommitDetail,
    /// The account GitHub maps the author's email to; `None` (`null`) when it maps to none.
    #[serde(default)]
    pub author: Option<User>,
}

/// A commit's git data (`commit` of a commit answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitDetail {
    /// The git author, as the commit records it (any text its author chose).
    #[serde(default)]
    pub author: Option<GitActor>,
}

/// A git author or committer: `{name, email, date}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitActor {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub date: Option<String>,
}

/// `full_name` of a repository object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoName {
    pub full_name: String,
}

/// `GET /repos/{o}/{r}/pulls/{n}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    /// `open` or `closed`.
    pub state: String,
    pub head: PullHead,
    pub base: PullBase,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub user: User,
    /// A draft pull request; absent on a GitHub that has no drafts, which is not one.
    #[serde(default)]
    pub draft: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullHead {
    pub sha: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// `None` when the fork was deleted.
    #[serde(default)]
    pub repo: Option<RepoName>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullBase {
    pub sha: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
}

/// An issue (or pull request) comment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    /// `None` for a deleted account in some answers.
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub html_url: String,
}

/// A pull request review comment: an inline comment, or a reply in its thread
/// (`GET /repos/{o}/{r}/pulls/{n}/comments`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
    /// The first comment of the thread this one replies in; absent for a thread's first.
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    #[serde(default)]
    pub created_at: Option<String>,
}

/// What creating or updating a check run answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    #[serde(default)]
    pub html_url: Option<String>,
}

/// What creating a pull request review answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    pub id: u64,
    #[serde(default)]
    pub html_url: Option<String>,
    /// `COMMENTED`, `APPROVED`, `CHANGES_REQUESTED`, `PENDING`.
    #[serde(default)]
    pub state: Option<String>,
}

/// One artifact of `GET /repos/{o}/{r}/actions/artifacts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    pub size_in_bytes: u64,
    #[serde(default)]
    pub archive_download_url: String,
    #[serde(default)]
    pub expired: bool,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub expires_at: Option<String>,
    /// `sha256:<hex>` for artifacts uploaded by upload-artifact v4 and later.
    #[serde(default)]
    pub digest: Option<String>,
    #[serde(default)]
    pub workflow_run: Option<ArtifactRun>,
}

/// The run an artifact listing names (GitHub sets these; the uploader cannot).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRun {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub repository_id: Option<u64>,
    #[serde(default)]
    pub head_repository_id: Option<u64>,
    #[serde(default)]
    pub head_branch: Option<String>,
    #[serde(default)]
    pub head_sha: Option<String>,
}

/// `GET /repos/{o}/{r}/actions/runs/{id}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    /// The workflow file, possibly with an `@ref` suffix (see [`Self::normalized_path`]).
    pub path: String,
    pub event: String,
    #[serde(default)]
    pub head_branch: Option<String>,
    pub head_sha: String,
    pub repository: RepoName,
    /// `None` when the head repository (a fork) was deleted.
    #[serde(default)]
    pub head_repository: Option<RepoName>,
    #[serde(default)]
    pub run_attempt: Option<u64>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
}

impl WorkflowRun {
    /// The workflow file without the `@ref` GitHub may append
    /// (`.github/workflows/build.yaml@refs/heads/main` → `.github/workflows/build.yaml`).
    ///
    /// Only the last `@` is cut, and only when what follows it is not itself a workflow file
    /// name: a file named `build.yaml@x.yml` must never read as `build.yaml`.
    pub fn normalized_path(&self) -> &str {
        normalize_path(&self.path)
    }

    /// The `@ref` part of the path, when GitHub gave one.
    pub fn workflow_ref(&self) -> Option<&str> {
        let base = normalize_path(&self.path);
        self.path.get(base.len() + 1..).filter(|r| !r.is_empty())
    }
}

fn normalize_path(path: &str) -> &str {
    match path.rsplit_once('@') {
        Some((file, git_ref))
            if !git_ref.is_empty() && !git_ref.ends_with(".yml") && !git_ref.ends_with(".yaml") =>
        {
            file
        }
        _ => path,
    }
}

/// The compare API's `status` of `head` against `base`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Comparison {
    pub status: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(path: &str) -> WorkflowRun {
        WorkflowRun {
            id: 1,
            path: path.into(),
            event: "push".into(),
            head_branch: None,
            head_sha: "a".repeat(40),
            repository: RepoName {
                full_name: "o/r".into(),
            },
            head_repository: None,
            run_attempt: None,
            status: None,
            conclusion: None,
        }
    }

    #[test]
    fn normalizes_workflow_paths() {
        for (path, normal, git_ref) in [
            (
                ".github/workflows/build.yaml@refs/heads/main",
                ".github/workflows/build.yaml",
                Some("refs/heads/main"),
            ),
            (
                ".github/workflows/build.yml@main",
                ".github/workflows/build.yml",
                Some("main"),
            ),
            (
                ".github/workflows/build.yml",
                ".github/workflows/build.yml",
                None,
            ),
            (
                ".github/workflows/build.yaml@x.yml",
                ".github/workflows/build.yaml@x.yml",
                None,
            ),
            (
                ".github/workflows/build.yaml@x.yml@refs/heads/main",
                ".github/workflows/build.yaml@x.yml",
                Some("refs/heads/main"),
            ),
            (".github/workflows/a.yml@", ".github/workflows/a.yml@", None),
        ] {
            assert_eq!(run(path).normalized_path(), normal, "{path}");
            assert_eq!(run(path).workflow_ref(), git_ref, "{path}");
        }
    }

    #[test]
    fn artifacts_take_githubs_nulls() {
        let a: Artifact = serde_json::from_str(
            r#"{"id":5,"node_id":"x","name":"n","size_in_bytes":10,"url":"u","archive_download_url":"d",
                "expired":false,"created_at":null,"updated_at":null,"expires_at":null,"digest":null,
                "workflow_run":null}"#,
        )
        .unwrap();
        assert_eq!(a.workflow_run, None);
        assert_eq!(a.created_at, None);
        let r: ArtifactRun = serde_json::from_str(r#"{"id":null,"repository_id":1,"head_repository_id":null,"head_branch":null,"head_sha":null}"#).unwrap();
        assert_eq!(r.repository_id, Some(1));
    }

    #[test]
    fn commits_take_an_author_without_account() {
        let c: Commit = serde_json::from_str(
            r#"{"sha":"a","node_id":"x","commit":{"author":{"name":"Mona","email":"m@x","date":"2026-01-01T00:00:00Z"},
                "committer":null,"message":"m","tree":{"sha":"t"}},"author":null,"committer":null,"parents":[]}"#,
        )
        .unwrap();
        assert_eq!(c.author, None);
        assert_eq!(
            c.commit.author.and_then(|a| a.name).as_deref(),
            Some("Mona")
        );
        let c: Commit = serde_json::from_str(
            r#"{"sha":"a","commit":{"author":null},"author":{"login":"reviewflow[bot]","id":1,"type":"Bot"}}"#,
        )
        .unwrap();
        assert_eq!(
            c.author.map(|u| (u.login, u.kind)),
            Some(("reviewflow[bot]".into(), "Bot".into()))
        );
    }

    #[test]
    fn pull_requests_take_a_deleted_fork() {
        let pr: PullRequest = serde_json::from_str(
            r#"{"number":7,"state":"open","title":"t","body":null,"user":{"login":"u","type":"User"},
                "head":{"sha":"h","ref":"f","repo":null},"base":{"sha":"b","ref":"main","repo":{"full_name":"o/r"}}}"#,
        )
        .unwrap();
        assert_eq!(pr.head.repo, None);
        assert_eq!(pr.body, None);
    }
}
