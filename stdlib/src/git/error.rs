//! What can go wrong when asking git. Messages carry the subcommand and git's own stderr
//! (trimmed, bounded, URL credentials masked); reviewflow never hands git a secret, so none can
//! come back through them.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run `git {subcommand}`: {source}")]
    Spawn {
        subcommand: String,
        #[source]
        source: io::Error,
    },

    #[error("`git {subcommand}` failed ({}): {stderr}", code.map_or("killed by a signal".to_owned(), |c| format!("exit {c}")))]
    Failed {
        subcommand: String,
        code: Option<i32>,
        stderr: String,
    },

    #[error("unknown revision {rev:?} (not a commit in this repository)")]
    UnknownRevision { rev: String },

    #[error(
        "{} is not in a git repository: reviewflow reviews a change between two commits of one. \
         Run it in a clone (or after `git init` and a first commit), or name one with \
         `--checkout DIR`",
        dir.display()
    )]
    NotARepository { dir: std::path::PathBuf },

    #[error(
        "the repository at {} has no commit yet: reviewflow reviews a change between two \
         commits. Commit your work (`git add -A && git commit -m \"…\"`), then run again",
        dir.display()
    )]
    NoCommits { dir: std::path::PathBuf },

    #[error("invalid revision {rev:?}: {reason}")]
    BadRevision { rev: String, reason: &'static str },

    #[error("invalid path {path:?}: {reason}")]
    BadPath { path: String, reason: &'static str },

    /// The checkout is a shallow clone and the commit the change starts from is beyond its
    /// boundary (`missing` says which), so the change cannot be told from the history before it.
    #[error(
        "the checkout is a shallow clone and {missing}, so the change under review cannot be told \
         apart from the history before it; check out the whole history (`fetch-depth: 0` with \
         actions/checkout) or run `git fetch --unshallow`"
    )]
    Shallow { missing: String },

    /// Every git call is bounded in time ([`super::timeout`]); the process group was killed.
    #[error(
        "`git {subcommand}` did not finish within {} s: it was killed (a hung git, or a repository too large to read in time)",
        .limit.as_secs_f64()
    )]
    TimedOut {
        subcommand: String,
        limit: std::time::Duration,
    },

    /// Its output passed the bound of the call; the process group was killed.
    #[error("`git {subcommand}` printed more than {}; refused", reviewflow_engine::bounded::size_text(*limit))]
    TooLarge { subcommand: String, limit: u64 },

    #[error("unexpected output from `git {subcommand}`: {output:?}")]
    BadOutput { subcommand: String, output: String },
}

/// Longest stderr excerpt kept in an error, in bytes.
pub(crate) const MAX_STDERR: usize = 2000;

/// Input echoed back in an error is cut to this many characters.
pub(crate) const MAX_ECHO: usize = 200;

pub(crate) fn echo(input: &str) -> String {
    input.chars().take(MAX_ECHO).collect()
}

/// git's stderr, made fit for an error message: lossy UTF-8, trimmed, credentials in URLs masked
/// (a fetch error can print `https://user:token@host/`), and cut to [`MAX_STDERR`] bytes.
pub(crate) fn tidy_stderr(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let masked = mask_url_credentials(text.trim());
    if masked.len() <= MAX_STDERR {
        return masked;
    }
    let mut end = MAX_STDERR;
    while !masked.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &masked[..end])
}

/// Replaces the user-info part of every `scheme://user-info@host` with `[redacted]`.
fn mask_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '\'' || c == '"')
            .unwrap_or(tail.len());
        match tail[..authority_end].rfind('@') {
            Some(user_end) => {
                out.push_str("[redacted]");
                rest = &tail[user_end..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_are_masked() {
        assert_eq!(
            mask_url_credentials(
                "fatal: unable to access 'https://x-access-token:ghs_abc@github.com/o/r/': 403"
            ),
            "fatal: unable to access 'https://[redacted]@github.com/o/r/': 403"
        );
        assert_eq!(
            mask_url_credentials("see https://example.com/a@b"),
            "see https://example.com/a@b"
        );
        assert_eq!(mask_url_credentials("no url"), "no url");
    }

    #[test]
    fn stderr_is_bounded() {
        let long = "é".repeat(MAX_STDERR);
        let tidy = tidy_stderr(long.as_bytes());
        assert!(tidy.len() <= MAX_STDERR + '…'.len_utf8());
    }
}
