//! Whether the work tree holds uncommitted changes to tracked files: the local forge reviews
//! commits, so such edits are not in the review, and the run says so.

use std::path::Path;

use super::GitError;
use super::command::run_ok;

/// `git status` of tracked files only (untracked files are not edits the user expects reviewed;
/// submodules are not entered: their git would run with their own configuration). `true` when a
/// tracked file is modified, added, deleted or renamed, staged or not.
pub fn has_uncommitted_changes(repo: &Path) -> Result<bool, GitError> {
    let out = run_ok(
        repo,
        "status",
        [
            "--porcelain=v1",
            "-z",
            "--untracked-files=no",
            "--ignore-submodules=all",
        ],
    )?;
    Ok(!out.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    #[test]
    fn tracked_edits_count_and_untracked_files_do_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        git(repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "one\n").expect("write");
        git(repo, &["add", "a.txt"]);
        git(repo, &["commit", "-q", "-m", "first"]);
        assert_eq!(has_uncommitted_changes(repo).ok(), Some(false));
        std::fs::write(repo.join("new.txt"), "untracked\n").expect("write");
        assert_eq!(has_uncommitted_changes(repo).ok(), Some(false));
        std::fs::write(repo.join("a.txt"), "two\n").expect("write");
        assert_eq!(has_uncommitted_changes(repo).ok(), Some(true));
        git(repo, &["add", "a.txt"]);
        assert_eq!(has_uncommitted_changes(repo).ok(), Some(true), "staged");
    }
}
