//! What a GitHub workflow holds of the file's words, written there by `export github`: a
//! trigger's `branches` patterns (GitHub's filter, in characters that need no YAML quoting
//! beyond single quotes) and a secret's `environment=` (a GitHub environment's name).

use reviewflow_engine::platform::Syntax;

/// The longest environment name GitHub takes.
const MAX_ENVIRONMENT_LEN: usize = 255;

/// A `branches` pattern: what GitHub's filter reads, in characters that need no YAML quoting
/// beyond single quotes. `!` negates and may only come first.
fn is_branch_pattern(word: &str) -> bool {
    let body = word.strip_prefix('!').unwrap_or(word);
    !body.is_empty()
        && !body.starts_with('/')
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./*?+".contains(&b))
}

fn is_environment_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ENVIRONMENT_LEN
        && name.trim() == name
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._- ".contains(&b))
}

pub const SYNTAX: Syntax = Syntax {
    branch_pattern: is_branch_pattern,
    branch_pattern_rule: "ASCII letters, digits and `-_./*?+!`, with `!` only first",
    negations_only: Some("GitHub needs one to negate from"),
    environment: is_environment_name,
    environment_rule: "1 to 255 bytes of ASCII letters, digits, `.`, `-`, `_` and inner spaces (GitHub's)",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_patterns() {
        for ok in ["main", "release/**", "!release/old", "v1.*", "feature-?"] {
            assert!(is_branch_pattern(ok), "{ok}");
        }
        for bad in [
            "",
            "!",
            "!!main",
            "/main",
            "main'",
            "a:b",
            "${{x}}",
            "a b",
            "ma\u{e9}n",
        ] {
            assert!(!is_branch_pattern(bad), "{bad}");
        }
    }

    #[test]
    fn environment_names() {
        for ok in ["enroll-review", "prod", "Review keys", "a.b_c"] {
            assert!(is_environment_name(ok), "{ok}");
        }
        let long = "e".repeat(MAX_ENVIRONMENT_LEN + 1);
        for bad in ["", " a", "a ", "a:b", "${{ x }}", "a\nb", long.as_str()] {
            assert!(!is_environment_name(bad), "{bad}");
        }
    }
}
