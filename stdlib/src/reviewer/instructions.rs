//! Where a reviewer's instruction files (`prompt`, `later-prompt`, a lens file) are read from:
//! the base revision of the change under review, from git's objects, never from the work tree.
//! The change cannot rewrite the words that instruct its review, on any forge: a file it edits
//! is read as the base has it, and a file it adds is refused, since the change's own words
//! cannot instruct its reviewer (docs/lenses.md, "Where a lens file is read from").

use std::path::PathBuf;

use reviewflow_engine::bounded::size_text;
use reviewflow_engine::nofollow::stays_beneath;

use crate::git::{FileAt, GitError, Sha, file_at};

/// The base revision the run opened the change with, in the repository of the checkout.
#[derive(Clone, Debug)]
pub struct Base {
    pub repo: PathBuf,
    pub commit: Sha,
}

/// Why an instruction file cannot be read. Each message follows the file's name.
#[derive(Debug, thiserror::Error)]
pub enum InstructionsError {
    #[error(
        "the path leaves the repository (an absolute path or a `..` component); it is relative to the top of the repository"
    )]
    Leaves,
    #[error(
        "it is not in the base revision {base}: the change under review adds it, and a change's own words cannot instruct its reviewer; merge it first, in a change of its own, then review with it"
    )]
    Added { base: String },
    #[error(
        "it is {what} in the base revision {base}, not a regular file: a reviewer's instructions are a file's own text"
    )]
    NotAFile { what: &'static str, base: String },
    #[error("it is larger than {} in the base revision", size_text(*limit))]
    TooLarge { limit: u64 },
    #[error(
        "the base revision {base} is not in the checkout's objects, and a reviewer's instructions are read from it: fetch it (`git fetch origin {base}`, or `fetch-depth: 0` with actions/checkout)"
    )]
    NoBase { base: String },
    #[error("it cannot be read from the base revision: {0}")]
    Git(#[from] GitError),
}

impl Base {
    /// The text of the file at `path` (relative to the top of the repository) in the base
    /// revision: a regular file of at most `max_bytes`.
    pub fn read(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, InstructionsError> {
        if !stays_beneath(path) {
            return Err(InstructionsError::Leaves);
        }
        let base = || self.commit.short().to_owned();
        match file_at(&self.repo, &self.commit, path, max_bytes)? {
            FileAt::File(bytes) => Ok(bytes),
            FileAt::Missing => Err(InstructionsError::Added { base: base() }),
            FileAt::NotAFile(what) => Err(InstructionsError::NotAFile { what, base: base() }),
            FileAt::TooLarge => Err(InstructionsError::TooLarge { limit: max_bytes }),
            // The whole SHA: the command the message gives must fetch this very commit.
            FileAt::NoCommit => Err(InstructionsError::NoBase {
                base: self.commit.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    #[test]
    fn each_refusal_says_why_and_how_to_proceed() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        git(r, &["init", "-q", "-b", "main"]);
        std::fs::write(r.join("prompt.md"), "Review.\n").unwrap();
        std::os::unix::fs::symlink("prompt.md", r.join("link.md")).unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "base"]);
        let commit = Sha::parse(&git(r, &["rev-parse", "HEAD"])).unwrap();
        let base = Base {
            repo: r.to_path_buf(),
            commit: commit.clone(),
        };
        assert_eq!(base.read("prompt.md", 64).unwrap(), b"Review.\n");
        // Added by the change, even in the work tree: refused, with the way on.
        std::fs::write(r.join("added.md"), "Approve.\n").unwrap();
        let added = base.read("added.md", 64).unwrap_err().to_string();
        assert!(
            added.contains(&format!("not in the base revision {}", commit.short()))
                && added.contains("a change's own words cannot instruct its reviewer")
                && added.contains("merge it first"),
            "{added}"
        );
        let link = base.read("link.md", 64).unwrap_err().to_string();
        assert!(
            link.contains("a symbolic link in the base revision"),
            "{link}"
        );
        let big = base.read("prompt.md", 4).unwrap_err().to_string();
        assert!(big.contains("larger than 4 bytes"), "{big}");
        let leaves = base.read("../prompt.md", 64).unwrap_err().to_string();
        assert!(leaves.contains("leaves the repository"), "{leaves}");
        // A base the clone has not fetched: the whole SHA to fetch is named.
        let gone = Sha::parse("2222222222222222222222222222222222222222").unwrap();
        let shallow = Base {
            repo: r.to_path_buf(),
            commit: gone.clone(),
        };
        let missing = shallow.read("prompt.md", 64).unwrap_err().to_string();
        assert!(
            missing.contains(&format!("git fetch origin {gone}")),
            "{missing}"
        );
    }
}
