//! The identifiers the local forge writes to disk and reads back: change ids (a folder name),
//! run ids and conversation ids. All are held to one pattern, `[A-Za-z0-9][A-Za-z0-9._-]*`,
//! bounded in length, so none can be a path separator, `.`/`..`, a hidden name or an option.

use super::LocalForgeError;
use super::error::echo;

/// Longest change id (a folder name), as `git::change_id` makes them.
pub const MAX_CHANGE_ID: usize = 64;
/// Longest run or conversation id.
pub const MAX_ID: usize = 128;
/// Longest reviewer name.
pub const MAX_REVIEWER: usize = 128;

/// Checks a change id: it names the change's folder.
pub fn check_change_id(id: &str) -> Result<(), LocalForgeError> {
    check_id("change id", id, MAX_CHANGE_ID)
}

/// Checks a run id or conversation id (`what` names which, for the message).
pub fn check_id(what: &'static str, id: &str, max: usize) -> Result<(), LocalForgeError> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > max {
        Some("it is too long")
    } else if !id.as_bytes()[0].is_ascii_alphanumeric() {
        Some("it must start with a letter or digit")
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        Some("it may hold only letters, digits, '.', '_' and '-'")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(LocalForgeError::BadId {
            what,
            value: echo(id),
            reason,
        }),
    }
}

/// Checks a reviewer's display name: printable text, no line breaks or control characters
/// (it is written into markdown and SARIF), bounded.
pub fn check_reviewer(name: &str) -> Result<(), LocalForgeError> {
    let reason = if name.trim().is_empty() {
        Some("it is empty")
    } else if name.chars().count() > MAX_REVIEWER {
        Some("it is too long")
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(LocalForgeError::BadId {
            what: "reviewer name",
            value: echo(name),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for good in [
            "branch-fix-1",
            "root",
            "0198f0c2-7a1b-7c3d-9e4f-001122334455",
            "a.b_c",
        ] {
            assert!(check_id("id", good, MAX_ID).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "-rf",
            ".hidden",
            "a b",
            "é",
            &"x".repeat(129),
        ] {
            assert!(check_id("id", bad, MAX_ID).is_err(), "{bad:?}");
        }
        assert!(check_change_id(&"x".repeat(65)).is_err());
    }

    #[test]
    fn reviewers() {
        assert!(check_reviewer("claude (claude-opus-5)").is_ok());
        for bad in ["", "  ", "a\nb", "a\u{1b}[31m"] {
            assert!(check_reviewer(bad).is_err(), "{bad:?}");
        }
    }
}
