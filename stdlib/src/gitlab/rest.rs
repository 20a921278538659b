//! The typed calls reviewflow makes, each one route of this project. Arguments that reach a URL
//! (commits, numbers) are checked or percent-encoded here.

use serde_json::json;

use super::client::percent_encode;
use super::{
    Client, CommitStatus, Comparison, DiffFile, DiffVersion, Discussion, GitlabError, MergeRequest,
    Note, Paging, Position, RepoCommit, User,
};

/// GitLab refuses a note longer than this many characters.
pub const MAX_NOTE_CHARS: usize = 1_000_000;
/// The most pages of notes read in a search for ours (100 a page), from each end: a flood of
/// notes costs at most twice this many calls.
pub const MAX_NOTE_PAGES: usize = 10;
/// The most pages of a merge request's discussions read (100 a page): every note of the merge
/// request is in one, so this bounds the notes an answer is looked for among.
pub const MAX_DISCUSSION_PAGES: usize = 20;
/// The most pages of a merge request's diffs read (100 files a page).
pub const MAX_DIFF_PAGES: usize = 100;

impl Client {
    /// `GET /user`: the account the token authenticates as (a project access token's bot user).
    pub async fn current_user(&self) -> Result<User, GitlabError> {
        self.get_json("/user").await
    }

    pub async fn merge_request(&self, iid: u64) -> Result<MergeRequest, GitlabError> {
        self.get_json(&self.mr_route(iid)).await
    }

    /// Every file of the merge request's latest diff, 100 a page, in at most `max_bytes` bytes
    /// of pages; refused past `max_pages` pages, since part of a diff is not the change.
    pub async fn merge_request_diffs(
        &self,
        iid: u64,
        max_pages: usize,
        max_bytes: u64,
    ) -> Result<(Vec<DiffFile>, Paging), GitlabError> {
        let route = format!("{}/diffs?per_page=100", self.mr_route(iid));
        let (files, paging) = self
            .get_pages(&route, max_pages, max_bytes, |_| false)
            .await?;
        if !paging.complete {
            return Err(GitlabError::Pagination(format!(
                "the diff of merge request !{iid} has more than {max_pages} pages of files: not reviewed in part"
            )));
        }
        Ok((files, paging))
    }

    /// The merge request's newest diff version (one page of one): what `/diffs` lists.
    pub async fn latest_version(&self, iid: u64) -> Result<DiffVersion, GitlabError> {
        let route = format!("{}/versions?per_page=1", self.mr_route(iid));
        let versions: Vec<DiffVersion> = self.get_json(&route).await?;
        versions.into_iter().next().ok_or_else(|| {
            GitlabError::decode(format!("the answer to GET {route}"), "no version listed")
        })
    }

    /// The merge request's notes by creation, oldest first (or newest first), 100 a page, at
    /// most `max_pages` pages; reading stops after the first page on which `found` holds for a
    /// note.
    pub async fn notes_until(
        &self,
        iid: u64,
        max_pages: usize,
        newest_first: bool,
        found: impl Fn(&Note) -> bool,
    ) -> Result<(Vec<Note>, Paging), GitlabError> {
        let route = format!(
            "{}/notes?sort={}&order_by=created_at&per_page=100",
            self.mr_route(iid),
            if newest_first { "desc" } else { "asc" }
        );
        // Each page under the client's cap, and no other: the page count bounds the total.
        self.get_pages(&route, max_pages, u64::MAX, |notes: &[Note]| {
            notes.iter().any(&found)
        })
        .await
    }

    pub async fn create_note(&self, iid: u64, body: &str) -> Result<Note, GitlabError> {
        check_note(body)?;
        let route = format!("{}/notes", self.mr_route(iid));
        self.post_json(&route, &json!({ "body": body })).await
    }

    pub async fn update_note(&self, iid: u64, id: u64, body: &str) -> Result<Note, GitlabError> {
        check_note(body)?;
        let route = format!("{}/notes/{id}", self.mr_route(iid));
        self.put_json(&route, &json!({ "body": body })).await
    }

    /// Every discussion of the merge request, oldest first, 100 a page: threads with their
    /// replies, and each plain note as a discussion of its own. Refused past `max_pages` pages:
    /// answers read in part would be taken for all that were written.
    pub async fn discussions(
        &self,
        iid: u64,
        max_pages: usize,
    ) -> Result<Vec<Discussion>, GitlabError> {
        let route = format!("{}/discussions?per_page=100", self.mr_route(iid));
        let (discussions, paging) = self
            .get_pages(&route, max_pages, u64::MAX, |_: &[Discussion]| false)
            .await?;
        if !paging.complete {
            return Err(GitlabError::Pagination(format!(
                "merge request !{iid} has more than {max_pages} pages of discussions: its answers are not read in part"
            )));
        }
        Ok(discussions)
    }

    /// A thread on a line of the diff.
    pub async fn create_discussion(
        &self,
        iid: u64,
        body: &str,
        position: &Position,
    ) -> Result<Discussion, GitlabError> {
        check_note(body)?;
        let route = format!("{}/discussions", self.mr_route(iid));
        self.post_json(&route, &json!({ "body": body, "position": position }))
            .await
    }

    /// `POST /projects/:id/statuses/:sha`: the commit status `name` on `sha`.
    pub async fn set_commit_status(
        &self,
        sha: &str,
        state: &str,
        name: &str,
        description: &str,
        target_url: Option<&str>,
    ) -> Result<CommitStatus, GitlabError> {
        check_sha(sha)?;
        let mut body = json!({ "state": state, "name": name, "description": description });
        if let Some(url) = target_url {
            body["target_url"] = json!(url);
        }
        let route = format!("{}/statuses/{sha}", self.project_route());
        self.post_json(&route, &body).await
    }

    pub async fn commit(&self, sha: &str) -> Result<RepoCommit, GitlabError> {
        check_sha(sha)?;
        let route = format!("{}/repository/commits/{sha}", self.project_route());
        self.get_json(&route).await
    }

    /// Whether `base` is an ancestor of `head` (or the same commit), by their merge base; `None`
    /// when GitLab knows either commit not (404, 400), e.g. a head that a force push removed.
    pub async fn is_ancestor(&self, base: &str, head: &str) -> Result<Option<bool>, GitlabError> {
        check_sha(base)?;
        check_sha(head)?;
        let route = format!(
            "{}/repository/merge_base?{}={base}&{}={head}",
            self.project_route(),
            percent_encode("refs[]"),
            percent_encode("refs[]")
        );
        match self.get_json::<RepoCommit>(&route).await {
            Ok(c) => Ok(Some(c.id.eq_ignore_ascii_case(base))),
            Err(e) if matches!(e.status(), Some(404 | 400)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The diff `from...to` (the changes on `to` since its merge base with `from`).
    pub async fn compare(&self, from: &str, to: &str) -> Result<Comparison, GitlabError> {
        check_sha(from)?;
        check_sha(to)?;
        let route = format!(
            "{}/repository/compare?from={from}&to={to}",
            self.project_route()
        );
        let comparison: Comparison = self.get_json(&route).await?;
        if comparison.compare_timeout {
            return Err(GitlabError::Invalid(format!(
                "GitLab timed out comparing {from} with {to}: its diff is partial"
            )));
        }
        Ok(comparison)
    }

    fn mr_route(&self, iid: u64) -> String {
        format!("{}/merge_requests/{iid}", self.project_route())
    }
}

fn check_note(body: &str) -> Result<(), GitlabError> {
    let chars = body.chars().count();
    if chars > MAX_NOTE_CHARS {
        return Err(GitlabError::Invalid(format!(
            "a note of {chars} characters is over GitLab's limit of {MAX_NOTE_CHARS}"
        )));
    }
    Ok(())
}

/// A full commit SHA (40 or 64 hex digits): nothing else reaches a route.
fn check_sha(sha: &str) -> Result<(), GitlabError> {
    if matches!(sha.len(), 40 | 64) && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(GitlabError::Invalid(format!(
            "{:?} is not a full commit SHA",
            crate::github::error::quote(sha)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_full_shas_reach_a_route() {
        assert!(check_sha(&"a".repeat(40)).is_ok());
        assert!(check_sha(&"0".repeat(64)).is_ok());
        for bad in [
            "",
            "main",
            "abc",
            &format!("{}/x", "a".repeat(38)),
            &"g".repeat(40),
        ] {
            assert!(check_sha(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn notes_over_the_limit_are_refused_before_a_call() {
        assert!(check_note("short").is_ok());
        assert!(check_note(&"x".repeat(MAX_NOTE_CHARS + 1)).is_err());
    }
}
