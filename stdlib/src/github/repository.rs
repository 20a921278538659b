//! A repository as `owner/name`, validated once so that routes can be built by plain
//! formatting: no `/`, `?`, `#`, `%` or `..` can reach a URL path from here.

use std::fmt;
use std::str::FromStr;

/// The longest owner (user or organization login) GitHub allows.
const MAX_OWNER_LEN: usize = 39;
/// The longest repository name GitHub allows.
const MAX_NAME_LEN: usize = 100;

/// `owner/name` of a GitHub repository.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Repository {
    pub owner: String,
    pub name: String,
}

/// Why a repository text was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid repository {text:?}: {reason}")]
pub struct InvalidRepository {
    /// The refused text, at most 160 characters of it.
    pub text: String,
    pub reason: &'static str,
}

impl Repository {
    /// Builds a repository from its two parts, checked as [`FromStr`] checks them.
    pub fn new(owner: &str, name: &str) -> Result<Self, InvalidRepository> {
        format!("{owner}/{name}").parse()
    }

    /// Whether `full_name` (as GitHub reports it) names this repository. GitHub treats owner and
    /// name case-insensitively.
    pub fn is(&self, full_name: &str) -> bool {
        match full_name.split_once('/') {
            Some((owner, name)) => {
                owner.eq_ignore_ascii_case(&self.owner) && name.eq_ignore_ascii_case(&self.name)
            }
            None => false,
        }
    }
}

impl FromStr for Repository {
    type Err = InvalidRepository;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |reason| InvalidRepository {
            text: text.chars().take(160).collect(),
            reason,
        };
        let (owner, name) = text
            .split_once('/')
            .ok_or_else(|| fail("expected owner/name"))?;
        check_owner(owner).map_err(fail)?;
        check_name(name).map_err(fail)?;
        Ok(Self {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
}

/// Logins: letters, digits and single inner hyphens, at most 39.
fn check_owner(owner: &str) -> Result<(), &'static str> {
    if owner.is_empty() {
        return Err("the owner is empty");
    }
    if owner.len() > MAX_OWNER_LEN {
        return Err("the owner is longer than 39 characters");
    }
    // Some old logins break the hyphen rules, so only the character set is enforced.
    if !owner
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err("the owner may hold only letters, digits and '-'");
    }
    Ok(())
}

/// Names: letters, digits, `.`, `_`, `-`, at most 100, and never `.` or `..`.
fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("the name is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return Err("the name is longer than 100 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err("the name may hold only letters, digits, '.', '_' and '-'");
    }
    if name.contains("..") || name == "." {
        return Err("the name may not be '.' or hold '..'");
    }
    Ok(())
}

impl fmt::Display for Repository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::Repository;

    #[test]
    fn accepts_and_refuses() {
        for good in ["octo/repo", "a-b/c.d_e-f", "A1/x", "o/.github"] {
            let repo: Repository = good.parse().unwrap();
            assert_eq!(repo.to_string(), good);
        }
        for bad in [
            "",
            "octo",
            "/repo",
            "octo/",
            "octo/repo/x",
            "octo/..",
            "octo/.",
            "octo/a..b",
            "oc to/repo",
            "octo/re?po",
            "octo/re#po",
            "octo/re%2fpo",
            "o_o/repo",
            &format!("{}/r", "a".repeat(40)),
            &format!("o/{}", "r".repeat(101)),
        ] {
            assert!(bad.parse::<Repository>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn compares_full_names_without_case() {
        let repo: Repository = "Octo/Repo".parse().unwrap();
        assert!(repo.is("octo/repo"));
        assert!(!repo.is("octo/repo2"));
        assert!(!repo.is("octorepo"));
    }
}
