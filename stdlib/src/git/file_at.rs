//! One file of a commit, read from git's objects, never from the work tree: what a reviewer is
//! told to do comes from the base revision, which the change under review cannot rewrite.
//!
//! `ls-tree --full-tree` names the entry at the path (its mode says whether it is a regular
//! file, a symbolic link, a folder or a submodule), then `cat-file blob` reads it, bounded in
//! size like every git call is in time. The path is given literally (`GIT_LITERAL_PATHSPECS`), so
//! `*` or `:(glob)` in it is a name, not a pattern.

use std::path::Path;

use super::command::{failed, git_command, output, spawn_bounded};
use super::{GitError, Sha};

/// What a commit holds at a path.
#[derive(Debug, PartialEq, Eq)]
pub enum FileAt {
    /// A regular file (executable or not), whole.
    File(Vec<u8>),
    /// Nothing at the path.
    Missing,
    /// Something other than a regular file: `a symbolic link`, `a folder`, `a submodule`.
    NotAFile(&'static str),
    /// A regular file larger than the bound it was read with.
    TooLarge,
    /// The commit is not in the repository's objects (a shallow or partial clone).
    NoCommit,
}

/// The file at `path` (relative to the top of the tree, `/`-separated, no `..`) in `commit`,
/// read when it is a regular file of at most `max_bytes`.
pub fn file_at(repo: &Path, commit: &Sha, path: &str, max_bytes: u64) -> Result<FileAt, GitError> {
    let wanted: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if wanted.is_empty() || wanted.contains(&"..") {
        return Err(GitError::BadPath {
            path: super::error::echo(path),
            reason: "not a path below the top of the tree",
        });
    }
    let wanted = wanted.join("/");
    // A root commit's change starts from the empty tree, which holds no file (and is no commit).
    if commit.is_empty_tree() {
        return Ok(FileAt::Missing);
    }
    let mut exists = git_command(repo, "cat-file");
    exists.args(["-e", "--end-of-options"]);
    exists.arg(format!("{}^{{commit}}", commit.as_str()));
    if !output(exists, "cat-file")?.status.success() {
        return Ok(FileAt::NoCommit);
    }
    let mut list = git_command(repo, "ls-tree");
    // After git_command, which removes the inherited `GIT_*` variables.
    list.env("GIT_LITERAL_PATHSPECS", "1");
    list.args([
        "--full-tree",
        "-z",
        "--end-of-options",
        commit.as_str(),
        "--",
    ]);
    list.arg(&wanted);
    let listed = output(list, "ls-tree")?;
    if !listed.status.success() {
        return Err(failed("ls-tree", &listed));
    }
    // `<mode> <type> <object>\t<path>\0`, the entry whose path is exactly the one asked for.
    let entry = listed.stdout.split(|b| *b == 0).find_map(|record| {
        let tab = record.iter().position(|b| *b == b'\t')?;
        (&record[tab + 1..] == wanted.as_bytes()).then(|| &record[..tab])
    });
    let Some(entry) = entry else {
        return Ok(FileAt::Missing);
    };
    let head = String::from_utf8_lossy(entry);
    let mut fields = head.split(' ');
    let (mode, object) = (fields.next(), fields.nth(1));
    let object = match (mode, object) {
        (Some("100644" | "100755"), Some(object)) => object.to_owned(),
        (Some("120000"), _) => return Ok(FileAt::NotAFile("a symbolic link")),
        (Some("040000"), _) => return Ok(FileAt::NotAFile("a folder")),
        (Some("160000"), _) => return Ok(FileAt::NotAFile("a submodule")),
        _ => {
            return Err(GitError::BadOutput {
                subcommand: "ls-tree".to_owned(),
                output: super::error::echo(&head),
            });
        }
    };
    let mut read = git_command(repo, "cat-file");
    read.args(["blob", "--end-of-options", &object]);
    let ran = spawn_bounded(read, "cat-file", max_bytes, 0)?;
    if ran.overflow.is_some() {
        return Ok(FileAt::TooLarge);
    }
    if !ran.status.success() {
        return Err(GitError::Failed {
            subcommand: "cat-file".to_owned(),
            code: ran.status.code(),
            stderr: super::error::tidy_stderr(&ran.stderr),
        });
    }
    Ok(FileAt::File(ran.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::git::testing::git;

    fn repo() -> (tempfile::TempDir, Sha) {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        git(r, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(r.join("lenses/sub")).unwrap();
        std::fs::write(r.join("lenses/a.md"), "base words\n").unwrap();
        std::fs::write(r.join("lenses/*.md"), "a star\n").unwrap();
        std::fs::write(r.join("lenses/sub/b.md"), "b\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", r.join("lenses/link.md")).unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "base"]);
        let base = Sha::parse(&git(r, &["rev-parse", "HEAD"])).unwrap();
        (repo, base)
    }

    #[test]
    fn the_commit_answers_not_the_work_tree() {
        let (repo, base) = repo();
        let r = repo.path();
        // The change rewrites the file and adds another, committed and not.
        std::fs::write(r.join("lenses/a.md"), "the change's words\n").unwrap();
        std::fs::write(r.join("lenses/new.md"), "added\n").unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "change"]);
        std::fs::write(r.join("lenses/a.md"), "uncommitted\n").unwrap();
        let at = |p: &str| file_at(r, &base, p, 64).unwrap();
        assert_eq!(at("lenses/a.md"), FileAt::File(b"base words\n".to_vec()));
        assert_eq!(at("./lenses//a.md"), FileAt::File(b"base words\n".to_vec()));
        assert_eq!(at("lenses/new.md"), FileAt::Missing);
        assert_eq!(at("lenses/*.md"), FileAt::File(b"a star\n".to_vec()));
        assert_eq!(at("lenses/b.md"), FileAt::Missing, "no path is a pattern");
        assert_eq!(at("lenses/link.md"), FileAt::NotAFile("a symbolic link"));
        assert_eq!(at("lenses/sub"), FileAt::NotAFile("a folder"));
        assert_eq!(at("lenses"), FileAt::NotAFile("a folder"));
        assert_eq!(at("lenses/sub/b.md"), FileAt::File(b"b\n".to_vec()));
        assert_eq!(
            file_at(r, &base, "lenses/a.md", 4).unwrap(),
            FileAt::TooLarge
        );
        assert!(file_at(r, &base, "../x", 64).is_err());
    }

    #[test]
    fn a_commit_not_fetched_is_said() {
        let (repo, _) = repo();
        let gone = Sha::parse("1111111111111111111111111111111111111111").unwrap();
        assert_eq!(
            file_at(repo.path(), &gone, "lenses/a.md", 64).unwrap(),
            FileAt::NoCommit
        );
        // The base of a root commit's change: it holds nothing, and is no commit to fetch.
        let empty = Sha::parse(crate::git::EMPTY_TREE_SHA1).unwrap();
        assert_eq!(
            file_at(repo.path(), &empty, "lenses/a.md", 64).unwrap(),
            FileAt::Missing
        );
    }
}
