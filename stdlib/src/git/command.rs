//! The one place a git command is built. Every call to git goes through [`git_command`], so the
//! hardening below holds everywhere:
//!
//! - Global options: `--no-pager`; `--no-optional-locks` (read-only commands never rewrite the
//!   index, so concurrent runs and the user's own git do not collide); `--no-replace-objects`
//!   (a `refs/replace/` entry cannot make a commit look like another); `-c core.quotepath=off`
//!   (non-ASCII paths in diffs stay readable; special characters are still quoted);
//!   `-c core.fsmonitor=false` (never start a monitor program); `-c color.ui=never`.
//! - Diff-producing subcommands also get `--no-ext-diff --no-textconv --no-color`, so neither a
//!   `diff.external` setting nor a `.gitattributes` driver from the reviewed change runs code.
//! - Environment: every inherited `GIT_*` variable is removed, so `GIT_DIR`/`GIT_WORK_TREE` cannot
//!   redirect `-C`, and `GIT_CONFIG_PARAMETERS`/`GIT_CONFIG_COUNT` (how `git -c` reaches child
//!   processes) cannot inject settings; we never pass a caller's `-c` values. Then
//!   `GIT_TERMINAL_PROMPT=0` (never wait for a password), `GIT_PAGER=cat`, `PAGER=cat` and
//!   `LC_ALL=C` (stable messages). Standard input is closed.
//! - The system and global config files are still read (`GIT_CONFIG_NOSYSTEM` is not set): CI
//!   images put `safe.directory` there, without which git refuses checkouts owned by another
//!   user. What they could change in our output is pinned instead: we use plumbing (`rev-parse`,
//!   `merge-base`, `diff-tree`, `symbolic-ref`), which ignores UI settings such as
//!   `diff.noprefix`, aliases cannot shadow built-in commands, and the settings above win over
//!   config files.
//! - Callers put revisions after `--end-of-options` and paths after `--`, so a ref named
//!   `--output=x` is a ref, not an option.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::GitError;
use super::error::tidy_stderr;

/// Subcommands that can print a diff and so get the diff hardening.
const DIFF_SUBCOMMANDS: &[&str] = &[
    "diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "show",
    "log",
    "format-patch",
];

/// A hardened `git -C <repo> … <subcommand>` with nothing after the subcommand's own fixed
/// options: append arguments, putting revisions after `--end-of-options` and paths after `--`.
pub fn git_command(repo: &Path, subcommand: &str) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo);
    cmd.args(["--no-pager", "--no-optional-locks", "--no-replace-objects"]);
    cmd.args([
        "-c",
        "core.quotepath=off",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "color.ui=never",
    ]);
    cmd.arg(subcommand);
    if DIFF_SUBCOMMANDS.contains(&subcommand) {
        cmd.args(["--no-ext-diff", "--no-textconv", "--no-color"]);
    }
    for (key, _) in std::env::vars_os() {
        if key.as_encoded_bytes().starts_with(b"GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    cmd
}

/// Runs `git <subcommand> <args>` in `repo` and returns its output, whatever its exit status.
pub(crate) fn run<I, S>(repo: &Path, subcommand: &str, args: I) -> Result<Output, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    git_command(repo, subcommand)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|source| GitError::Spawn {
            subcommand: subcommand.to_owned(),
            source,
        })
}

/// Like [`run`], but a non-zero exit is an error; returns stdout.
pub(crate) fn run_ok<I, S>(repo: &Path, subcommand: &str, args: I) -> Result<Vec<u8>, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let output = run(repo, subcommand, args)?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(failed(subcommand, &output))
    }
}

pub(crate) fn failed(subcommand: &str, output: &Output) -> GitError {
    GitError::Failed {
        subcommand: subcommand.to_owned(),
        code: output.status.code(),
        stderr: tidy_stderr(&output.stderr),
    }
}

/// stdout as one trimmed line of UTF-8.
pub(crate) fn one_line(subcommand: &str, stdout: &[u8]) -> Result<String, GitError> {
    let text = std::str::from_utf8(stdout).map_err(|_| GitError::BadOutput {
        subcommand: subcommand.to_owned(),
        output: super::error::echo(&String::from_utf8_lossy(stdout)),
    })?;
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}
