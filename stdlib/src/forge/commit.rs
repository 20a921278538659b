//! A commit's message, split the way git splits it: the subject (the first paragraph, its lines
//! joined by spaces, as `%s` prints it) and the body (everything after, as `%b`); and its author
//! name, as `%an` prints it.
//!
//! Read with `git cat-file commit`: plumbing, so no `log` formatting, encoding re-coding,
//! mailmap or configuration touches it (a `.mailmap` the change adds cannot rename its author).
//! The text is the change author's and untrusted; it is bounded here and labelled by the callers.

use std::path::Path;

use crate::git::{GitError, Sha};

/// Longest subject kept, in characters.
pub const MAX_TITLE_CHARS: usize = 1_000;
/// Longest body kept, in bytes (cut at a character boundary).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A commit's subject and body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    pub title: String,
    pub body: String,
}

/// The message of commit `sha`.
pub fn message(repo: &Path, sha: &Sha) -> Result<Message, GitError> {
    let stdout = crate::git::run_ok(
        repo,
        "cat-file",
        ["commit", "--end-of-options", sha.as_str()],
    )?;
    Ok(parse_commit(&String::from_utf8_lossy(&stdout)))
}

/// The author name of commit `sha`, exactly as the commit object records it.
pub fn author_name(repo: &Path, sha: &Sha) -> Result<String, GitError> {
    let stdout = crate::git::run_ok(
        repo,
        "cat-file",
        ["commit", "--end-of-options", sha.as_str()],
    )?;
    let raw = String::from_utf8_lossy(&stdout);
    parse_author(&raw).ok_or_else(|| GitError::BadOutput {
        subcommand: "cat-file".to_owned(),
        output: format!("commit {} has no author line", sha.short()),
    })
}

/// The name of a raw commit's `author` header: what comes before the `<` of the email, without
/// the space before it (git's own split of an ident line).
pub(crate) fn parse_author(raw: &str) -> Option<String> {
    let headers = raw.split_once("\n\n").map_or(raw, |(h, _)| h);
    let ident = headers.lines().find_map(|l| l.strip_prefix("author "))?;
    let (name, _) = ident.split_once('<')?;
    Some(name.trim_end().chars().take(MAX_TITLE_CHARS).collect())
}

/// Splits a raw commit object into its message's subject and body.
pub(crate) fn parse_commit(raw: &str) -> Message {
    // Headers end at the first empty line; continuation lines (a signature) start with a space
    // and are never empty, so the first empty line is the end.
    let message = raw.split_once("\n\n").map_or("", |(_, m)| m);
    let mut lines = message.lines().skip_while(|l| l.trim().is_empty());
    let mut subject = Vec::new();
    for line in lines.by_ref() {
        if line.trim().is_empty() {
            break;
        }
        subject.push(line.trim());
    }
    let body: Vec<&str> = lines.skip_while(|l| l.trim().is_empty()).collect();
    Message {
        title: subject.join(" ").chars().take(MAX_TITLE_CHARS).collect(),
        body: bounded(body.join("\n").trim_end(), MAX_BODY_BYTES),
    }
}

fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… cut at {max} bytes]", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_and_body() {
        let raw = "tree 1\nauthor a <a> 1 +0000\ngpgsig -----BEGIN-----\n x\n -----END-----\n\n\
                   Fix the thing\nacross two lines\n\nWhy it was broken.\n\nMore.\n";
        let m = parse_commit(raw);
        assert_eq!(m.title, "Fix the thing across two lines");
        assert_eq!(m.body, "Why it was broken.\n\nMore.");
        assert_eq!(
            parse_commit("tree 1\n\nonly\n"),
            Message {
                title: "only".into(),
                body: String::new()
            }
        );
        assert_eq!(parse_commit("tree 1\n"), Message::default());
    }

    #[test]
    fn author_names() {
        let raw = "tree 1\nparent 2\nauthor reviewflow[bot] <1+reviewflow[bot]@users.noreply.github.com> 1 +0000\n\
                   committer GitHub <noreply@github.com> 1 +0000\n\nauthor Not Me <x> 1 +0000\n";
        assert_eq!(parse_author(raw).as_deref(), Some("reviewflow[bot]"));
        assert_eq!(
            parse_author("tree 1\nauthor  Two  Spaces  <a@b> 1 +0000\n\nm\n").as_deref(),
            Some(" Two  Spaces")
        );
        // Only the headers count: an `author` line of the message is text.
        assert_eq!(parse_author("tree 1\n\nauthor Not Me <x> 1 +0000\n"), None);
        assert_eq!(parse_author("tree 1\nauthor no email\n\nm\n"), None);
    }

    #[test]
    fn bodies_are_bounded() {
        let raw = format!("tree 1\n\nt\n\n{}", "é".repeat(MAX_BODY_BYTES));
        let m = parse_commit(&raw);
        assert!(m.body.len() < MAX_BODY_BYTES + 40);
        assert!(m.body.ends_with("bytes]"));
    }
}
