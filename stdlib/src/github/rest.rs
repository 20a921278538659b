//! The typed calls reviewflow makes, each one route of this repository. Arguments that reach a
//! URL (revisions, artifact names) are checked or percent-encoded here.

use std::cmp::Ordering;

use super::clock::parse_rfc3339;
use super::models::Comparison;
use super::{
    Artifact, CheckRun, Client, Commit, GithubError, IssueComment, PullRequest, Review,
    ReviewComment, WorkflowRun,
};

/// GitHub refuses a comment body longer than this many characters (422).
pub const MAX_COMMENT_CHARS: usize = 65_536;
/// The most pages of comments read (100 a page).
pub const MAX_COMMENT_PAGES: usize = 50;

impl Client {
    pub async fn pull_request(&self, number: u64) -> Result<PullRequest, GithubError> {
        self.get_json(&format!("{}/pulls/{number}", self.repo_route()))
            .await
    }

    /// Every comment of an issue or pull request, oldest first, as GitHub lists them.
    pub async fn issue_comments(&self, number: u64) -> Result<Vec<IssueComment>, GithubError> {
        let route = format!(
            "{}/issues/{number}/comments?per_page=100",
            self.repo_route()
        );
        self.get_pages(&route, None, MAX_COMMENT_PAGES).await
    }

    /// Every review comment of a pull request (inline comments and the replies in their
    /// threads), as GitHub lists them.
    pub async fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, GithubError> {
        let route = format!("{}/pulls/{number}/comments?per_page=100", self.repo_route());
        self.get_pages(&route, None, MAX_COMMENT_PAGES).await
    }

    pub async fn create_issue_comment(
        &self,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GithubError> {
        check_comment(body)?;
        let route = format!("{}/issues/{number}/comments", self.repo_route());
        self.post_json(&route, &serde_json::json!({ "body": body }))
            .await
    }

    pub async fn update_issue_comment(
        &self,
        id: u64,
        body: &str,
    ) -> Result<IssueComment, GithubError> {
        check_comment(body)?;
        let route = format!("{}/issues/comments/{id}", self.repo_route());
        self.patch_json(&route, &serde_json::json!({ "body": body }))
            .await
    }

    /// The diff `base...head` (the changes on `head` since its merge base with `base`).
    pub async fn compare_diff(
        &self,
        base: &str,
        head: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, GithubError> {
        let route = self.compare_route(base, head)?;
        self.get_diff(&route, max_bytes).await
    }

    pub async fn pull_diff(&self, number: u64, max_bytes: u64) -> Result<Vec<u8>, GithubError> {
        self.get_diff(&format!("{}/pulls/{number}", self.repo_route()), max_bytes)
            .await
    }

    /// Whether `base` is an ancestor of `head` (or the same commit); `None` when GitHub knows
    /// either commit not (404), e.g. a head that a force push removed.
    pub async fn commit_is_ancestor(
        &self,
        base: &str,
        head: &str,
    ) -> Result<Option<bool>, GithubError> {
        // One commit a page: only `status` is read, and the answer stays small.
        let route = format!("{}?per_page=1", self.compare_route(base, head)?);
        let comparison: Comparison = match self.get_json(&route).await {
            Ok(c) => c,
            Err(e) if e.status() == Some(404) => return Ok(None),
            Err(e) => return Err(e),
        };
        match comparison.status.as_str() {
            "ahead" | "identical" => Ok(Some(true)),
            "behind" | "diverged" => Ok(Some(false)),
            other => Err(GithubError::decode(
                format!("the answer to GET {route}"),
                format!("an unknown compare status {other:?}"),
            )),
        }
    }

    /// The commit `sha` with the account its author maps to. One changed file a page: only the
    /// author is read, and the answer of a large commit stays small.
    pub async fn commit(&self, sha: &str) -> Result<Commit, GithubError> {
        check_rev(sha)?;
        self.get_json(&format!("{}/commits/{sha}?per_page=1", self.repo_route()))
            .await
    }

    pub async fn create_check_run(
        &self,
        body: &serde_json::Value,
    ) -> Result<CheckRun, GithubError> {
        self.post_json(&format!("{}/check-runs", self.repo_route()), body)
            .await
    }

    pub async fn update_check_run(
        &self,
        id: u64,
        body: &serde_json::Value,
    ) -> Result<CheckRun, GithubError> {
        self.patch_json(&format!("{}/check-runs/{id}", self.repo_route()), body)
            .await
    }

    pub async fn create_review(
        &self,
        number: u64,
        body: &serde_json::Value,
    ) -> Result<Review, GithubError> {
        self.post_json(
            &format!("{}/pulls/{number}/reviews", self.repo_route()),
            body,
        )
        .await
    }

    /// The artifacts named `name`, newest first: by `created_at`, then by id (both descending),
    /// with those GitHub gives no `created_at` last.
    pub async fn list_artifacts(
        &self,
        name: &str,
        max_pages: usize,
    ) -> Result<Vec<Artifact>, GithubError> {
        let route = format!(
            "{}/actions/artifacts?name={}&per_page=100",
            self.repo_route(),
            percent_encode(name)
        );
        let mut artifacts: Vec<Artifact> =
            self.get_pages(&route, Some("artifacts"), max_pages).await?;
        sort_newest_first(&mut artifacts);
        Ok(artifacts)
    }

    /// This repository's id (`GET /repos/{owner}/{repo}`).
    pub async fn repository_id(&self) -> Result<u64, GithubError> {
        #[derive(serde::Deserialize)]
        struct Repo {
            id: u64,
        }
        let repo: Repo = self.get_json(&self.repo_route()).await?;
        Ok(repo.id)
    }

    pub async fn workflow_run(&self, id: u64) -> Result<WorkflowRun, GithubError> {
        self.get_json(&format!("{}/actions/runs/{id}", self.repo_route()))
            .await
    }

    fn compare_route(&self, base: &str, head: &str) -> Result<String, GithubError> {
        check_rev(base)?;
        check_rev(head)?;
        Ok(format!("{}/compare/{base}...{head}", self.repo_route()))
    }
}

pub(crate) fn sort_newest_first(artifacts: &mut [Artifact]) {
    let key = |a: &Artifact| a.created_at.as_deref().and_then(parse_rfc3339);
    artifacts.sort_by(|a, b| match (key(a), key(b)) {
        (Some(x), Some(y)) => y.cmp(&x).then(b.id.cmp(&a.id)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => b.id.cmp(&a.id),
    });
}

fn check_comment(body: &str) -> Result<(), GithubError> {
    let chars = body.chars().count();
    if chars > MAX_COMMENT_CHARS {
        return Err(GithubError::Invalid(format!(
            "a comment of {chars} characters is over GitHub's limit of {MAX_COMMENT_CHARS}"
        )));
    }
    Ok(())
}

/// A commit SHA or a ref name as the compare and commit routes take it: no `..`, no URL syntax.
fn check_rev(rev: &str) -> Result<(), GithubError> {
    let ok = !rev.is_empty()
        && rev.len() <= 255
        && !rev.starts_with(['/', '-', '.'])
        && !rev.ends_with(['/', '.'])
        && !rev.contains("..")
        && !rev.contains("//")
        && rev
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'));
    if ok {
        Ok(())
    } else {
        Err(GithubError::Invalid(format!(
            "{:?} is not a revision the compare API takes",
            super::error::quote(rev)
        )))
    }
}

/// RFC 3986 percent-encoding of a query value: unreserved characters pass, every other byte
/// becomes `%XX`.
pub(crate) fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(id: u64, created_at: Option<&str>) -> Artifact {
        Artifact {
            id,
            name: "n".into(),
            size_in_bytes: 1,
            archive_download_url: String::new(),
            expired: false,
            created_at: created_at.map(Into::into),
            updated_at: None,
            expires_at: None,
            digest: None,
            workflow_run: None,
        }
    }

    #[test]
    fn sorts_newest_first_with_nulls_last() {
        let mut v = vec![
            artifact(1, Some("2026-01-01T00:00:00Z")),
            artifact(2, None),
            artifact(3, Some("2026-01-02T00:00:00Z")),
            artifact(4, Some("2026-01-01T00:00:00Z")),
            artifact(5, None),
        ];
        sort_newest_first(&mut v);
        let ids: Vec<u64> = v.iter().map(|a| a.id).collect();
        assert_eq!(ids, [3, 4, 1, 5, 2]);
    }

    #[test]
    fn revisions_and_query_values() {
        for good in ["a".repeat(40).as_str(), "main", "feature/x-1", "v1.2"] {
            assert!(check_rev(good).is_ok(), "{good}");
        }
        for bad in [
            "", "a..b", "a...b", "/x", "-x", "x/", "a?b", "a#b", "a b", "a%2f", ".x",
        ] {
            assert!(check_rev(bad).is_err(), "{bad}");
        }
        assert_eq!(percent_encode("review-5_a.b~"), "review-5_a.b~");
        assert_eq!(percent_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
