//! What a `.gitlab-ci.yml` would hold of the file's words: the `branches` of a
//! `merge_request_event` trigger (the merge request's target branches, as names with `*`
//! wildcards, the way GitLab's protected branches are named) and a secret's `environment=` (a
//! GitLab environment's name).
//!
//! Both are kept to what needs no quoting and expands nothing: GitLab expands `$VARIABLE` (and
//! `${VARIABLE}`) in an environment's name, and a name built from a variable the change sets
//! (`review/$CI_COMMIT_REF_NAME`) would let the change pick the environment, and so its secrets.
//! GitLab's own rule also admits `$`, `{` and `}`; reviewflow does not.

use reviewflow_engine::platform::Syntax;

/// The longest environment name GitLab takes.
const MAX_ENVIRONMENT_LEN: usize = 255;

/// A `branches` pattern: a branch name git accepts, in ASCII letters, digits and `-_./`, with
/// `*` as a wildcard; `!` negates and may only come first.
fn is_branch_pattern(word: &str) -> bool {
    let body = word.strip_prefix('!').unwrap_or(word);
    !body.is_empty()
        && !body.starts_with(['/', '-', '.'])
        && !body.ends_with(['/', '.'])
        && !body.ends_with(".lock")
        && !body.contains("..")
        && !body.contains("//")
        && !body.contains("/.")
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./*".contains(&b))
}

/// An environment name: letters, digits, `-`, `_`, `.`, `/` and inner spaces, neither starting
/// nor ending with `/` (GitLab's rule, without its `$`, `{` and `}`).
pub(crate) fn is_environment_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ENVIRONMENT_LEN
        && name.trim() == name
        && !name.starts_with('/')
        && !name.ends_with('/')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./ ".contains(&b))
}

pub const SYNTAX: Syntax = Syntax {
    branch_pattern: is_branch_pattern,
    branch_pattern_rule: "a branch name of ASCII letters, digits and `-_./`, with `*` as a wildcard and `!` only first",
    negations_only: Some(
        "a filter of negations alone admits every branch it does not name, one created later included",
    ),
    environment: is_environment_name,
    environment_rule: "1 to 255 bytes of ASCII letters, digits, `-`, `_`, `.`, `/` and inner spaces, not starting or ending with `/` (GitLab's, without the `$` that expands a variable)",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_patterns() {
        for ok in [
            "main",
            "release/*",
            "!release/old",
            "v1.2",
            "feature-*",
            "a_b",
        ] {
            assert!(is_branch_pattern(ok), "{ok}");
        }
        for bad in [
            "",
            "!",
            "!!main",
            "/main",
            "main/",
            "-main",
            "a..b",
            "a//b",
            "a/.b",
            "main.lock",
            "main.",
            "a b",
            "a:b",
            "v1.?",
            "$CI_DEFAULT_BRANCH",
            "ma\u{e9}n",
        ] {
            assert!(!is_branch_pattern(bad), "{bad}");
        }
    }

    #[test]
    fn environment_names() {
        for ok in [
            "review-seal",
            "production",
            "review/post",
            "Review keys",
            "a.b_c",
        ] {
            assert!(is_environment_name(ok), "{ok}");
        }
        let long = "e".repeat(MAX_ENVIRONMENT_LEN + 1);
        for bad in [
            "",
            " a",
            "a ",
            "/a",
            "a/",
            "review/$CI_COMMIT_REF_NAME",
            "${X}",
            "a:b",
            "a\nb",
            long.as_str(),
        ] {
            assert!(!is_environment_name(bad), "{bad}");
        }
    }
}
