//! A commit's files written to a folder: the workspace a model reviewer reads, so that it sees
//! the head under review rather than whatever the checkout holds (uncommitted edits, another
//! branch, the base of a pull request).
//!
//! `read-tree` into a private index file, then `checkout-index --prefix`: the repository's own
//! index, work tree and refs are never touched. Symbolic links in the commit become plain files
//! holding the link's text (`core.symlinks=false`), so nothing in the workspace points outside
//! it. Content filters run only as the runner's own git configuration says (the change cannot
//! configure git); hooks do not run.

use std::path::Path;

use super::command::{failed, git_command, output};
use super::{GitError, Sha};

/// Writes the files of `commit` under `to` (created if missing; existing files are replaced).
/// `scratch` is a folder for the private index (it must not be inside `to`).
pub fn export_commit(repo: &Path, commit: &Sha, to: &Path, scratch: &Path) -> Result<(), GitError> {
    let io = |what: &str, source: std::io::Error| GitError::Spawn {
        subcommand: what.to_owned(),
        source,
    };
    std::fs::create_dir_all(to).map_err(|e| io("create the workspace", e))?;
    std::fs::create_dir_all(scratch).map_err(|e| io("create the index folder", e))?;
    let index = scratch.join("workspace.index");
    let run = |subcommand: &str, args: &[&std::ffi::OsStr]| -> Result<(), GitError> {
        let mut cmd = git_command(repo, subcommand);
        cmd.args(args)
            .env("GIT_INDEX_FILE", &index)
            // `git -c core.symlinks=false`, given the way git passes `-c` to itself.
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "core.symlinks")
            .env("GIT_CONFIG_VALUE_0", "false");
        let output = output(cmd, subcommand)?;
        if output.status.success() {
            Ok(())
        } else {
            Err(failed(subcommand, &output))
        }
    };
    run(
        "read-tree",
        &["--end-of-options".as_ref(), commit.as_str().as_ref()],
    )?;
    // The prefix must end with a slash: it is a folder, not a file-name prefix.
    let mut prefix = to.as_os_str().to_owned();
    prefix.push("/");
    let mut prefix_arg = std::ffi::OsString::from("--prefix=");
    prefix_arg.push(&prefix);
    run(
        "checkout-index",
        &["-a".as_ref(), "-f".as_ref(), &prefix_arg],
    )?;
    let _ = std::fs::remove_file(&index);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::git::testing::git;

    #[test]
    fn the_commit_is_exported_without_touching_the_repository() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        git(r, &["init", "-q", "-b", "main"]);
        std::fs::create_dir(r.join("src")).unwrap();
        std::fs::write(r.join("src/lib.rs"), "committed\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", r.join("link")).unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "one"]);
        let head = Sha::parse(&git(r, &["rev-parse", "HEAD"])).unwrap();
        // An uncommitted edit and a staged one: neither is the head.
        std::fs::write(r.join("src/lib.rs"), "edited\n").unwrap();
        std::fs::write(r.join("staged.txt"), "staged\n").unwrap();
        git(r, &["add", "staged.txt"]);
        let status = git(r, &["status", "--porcelain"]);

        let out = tempfile::tempdir().unwrap();
        let to = out.path().join("workspace");
        export_commit(r, &head, &to, &out.path().join("scratch")).unwrap();
        assert_eq!(
            std::fs::read_to_string(to.join("src/lib.rs")).unwrap(),
            "committed\n"
        );
        assert!(!to.join("staged.txt").exists());
        let link = std::fs::symlink_metadata(to.join("link")).unwrap();
        assert!(link.is_file(), "a link becomes a plain file");
        assert_eq!(
            std::fs::read_to_string(to.join("link")).unwrap(),
            "/etc/passwd"
        );
        assert_eq!(
            git(r, &["status", "--porcelain"]),
            status,
            "the repository is untouched"
        );
    }

    #[test]
    fn an_unknown_commit_is_an_error() {
        let repo = tempfile::tempdir().unwrap();
        git(repo.path(), &["init", "-q", "-b", "main"]);
        let sha = Sha::parse("1111111111111111111111111111111111111111").unwrap();
        let out = tempfile::tempdir().unwrap();
        assert!(
            export_commit(
                repo.path(),
                &sha,
                &out.path().join("w"),
                &out.path().join("s")
            )
            .is_err()
        );
    }
}
