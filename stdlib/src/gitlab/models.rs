//! The parts of GitLab's REST v4 answers reviewflow reads. Unknown fields are ignored (GitLab
//! adds fields between versions); a field a version may leave out is an `Option` or defaults.

use serde::{Deserialize, Serialize};

/// A user as GitLab embeds one (`author` of a merge request or a note; `GET /user`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct User {
    pub id: u64,
    pub username: String,
    #[serde(default)]
    pub name: String,
    /// Present on `GET /user` and in newer embeddings: a project or group access token's user.
    #[serde(default)]
    pub bot: Option<bool>,
}

/// `diff_refs`: the three commits GitLab computed the merge request's diff between.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct DiffRefs {
    /// The merge base of the source and target branches.
    pub base_sha: String,
    pub head_sha: String,
    /// The target branch's head when the diff was computed.
    pub start_sha: String,
}

/// `GET /projects/:id/merge_requests/:iid`.
#[derive(Clone, Debug, Deserialize)]
pub struct MergeRequest {
    pub id: u64,
    pub iid: u64,
    pub project_id: u64,
    pub title: String,
    #[serde(default)]
    pub description: Option<String>,
    pub state: String,
    pub source_branch: String,
    pub target_branch: String,
    #[serde(default)]
    pub source_project_id: Option<u64>,
    #[serde(default)]
    pub target_project_id: Option<u64>,
    #[serde(default)]
    pub author: Option<User>,
    /// The source branch's head.
    #[serde(default)]
    pub sha: Option<String>,
    /// Absent (`null`) while GitLab has not computed the diff yet.
    #[serde(default)]
    pub diff_refs: Option<DiffRefs>,
    #[serde(default)]
    pub web_url: String,
    /// A draft merge request (GitLab 13.2 on); older instances say it only in
    /// `work_in_progress`, which newer ones still send alongside.
    #[serde(default)]
    pub draft: Option<bool>,
    #[serde(default)]
    pub work_in_progress: Option<bool>,
}

impl MergeRequest {
    /// Whether GitLab marks it a draft, in either field.
    pub fn is_draft(&self) -> bool {
        self.draft.or(self.work_in_progress).unwrap_or(false)
    }
}

/// One file of `GET …/merge_requests/:iid/diffs` (and of a comparison's `diffs`): its hunks
/// without git's header lines, which [`super::unified_diff`] writes back.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct DiffFile {
    pub old_path: String,
    pub new_path: String,
    #[serde(default)]
    pub a_mode: Option<String>,
    #[serde(default)]
    pub b_mode: Option<String>,
    #[serde(default)]
    pub diff: String,
    #[serde(default)]
    pub new_file: bool,
    #[serde(default)]
    pub renamed_file: bool,
    #[serde(default)]
    pub deleted_file: bool,
    /// GitLab left the hunks out: the file's diff is over its limits.
    #[serde(default)]
    pub too_large: Option<bool>,
    /// GitLab shortened or left out the hunks (a collapsed file).
    #[serde(default)]
    pub collapsed: Option<bool>,
}

/// A note (a comment) of a merge request.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Note {
    pub id: u64,
    #[serde(default)]
    pub body: String,
    pub author: User,
    /// GitLab's own notes ("added 1 commit"): never ours.
    #[serde(default)]
    pub system: bool,
    #[serde(default)]
    pub created_at: Option<String>,
    /// `null` for a plain note, `DiffNote` or `DiscussionNote` in a thread.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

/// Where a discussion sits in the diff (`position`), as GitLab takes it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Position {
    /// Always `text`.
    pub position_type: String,
    pub base_sha: String,
    pub start_sha: String,
    pub head_sha: String,
    pub old_path: String,
    pub new_path: String,
    /// The line in the new file; `None` for a removed line.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub new_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub old_line: Option<u32>,
}

/// A thread of a merge request (`POST …/merge_requests/:iid/discussions`'s answer, and each
/// item of their listing): its notes oldest first, the first the one that opened it.
#[derive(Clone, Debug, Deserialize)]
pub struct Discussion {
    pub id: String,
    /// A plain note, listed as a discussion of its own: nothing replies to it.
    #[serde(default)]
    pub individual_note: bool,
    #[serde(default)]
    pub notes: Vec<Note>,
}

/// `POST /projects/:id/statuses/:sha`'s answer.
#[derive(Clone, Debug, Deserialize)]
pub struct CommitStatus {
    pub id: u64,
    pub sha: String,
    pub status: String,
    pub name: String,
    #[serde(default)]
    pub target_url: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// A commit of the repository API (`repository/commits/:sha`, `repository/merge_base`).
/// `author_name` is what the commit says: GitLab maps no account to it.
#[derive(Clone, Debug, Deserialize)]
pub struct RepoCommit {
    pub id: String,
    #[serde(default)]
    pub author_name: Option<String>,
    #[serde(default)]
    pub author_email: Option<String>,
}

/// `GET /projects/:id/repository/compare`.
#[derive(Clone, Debug, Deserialize)]
pub struct Comparison {
    #[serde(default)]
    pub diffs: Vec<DiffFile>,
    /// GitLab stopped computing the comparison: its diffs are partial.
    #[serde(default)]
    pub compare_timeout: bool,
}

/// One version of a merge request's diff (`GET …/merge_requests/:iid/versions`): GitLab keeps
/// one per push, with ids that only grow, so a version id names one diff for good.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct DiffVersion {
    pub id: u64,
    pub head_commit_sha: String,
    pub base_commit_sha: String,
    pub start_commit_sha: String,
}

#[cfg(test)]
mod tests {
    use super::MergeRequest;

    fn merge_request(flags: &str) -> MergeRequest {
        let text = format!(
            r#"{{"id": 1, "iid": 7, "project_id": 42, "title": "t", "state": "opened",
                "source_branch": "f", "target_branch": "main"{flags}}}"#
        );
        serde_json::from_str(&text).expect("a merge request")
    }

    #[test]
    fn a_draft_is_read_from_either_field() {
        assert!(merge_request(r#", "draft": true, "work_in_progress": true"#).is_draft());
        // An instance older than 13.2 sends only `work_in_progress`.
        assert!(merge_request(r#", "work_in_progress": true"#).is_draft());
        assert!(!merge_request(r#", "draft": false, "work_in_progress": false"#).is_draft());
        assert!(!merge_request("").is_draft());
    }
}
