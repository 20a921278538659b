//! The local forge's repository identity (the `repo` input): what every clone of one repository
//! agrees on, so a conversation sealed in one checkout opens in another of the same repository
//! whatever its folder is called. In order: `forge "local" repo="…"`, else the `origin` remote's
//! URL normalised ([`remote_identity`]), else the checkout folder's name (with a warning, since
//! resuming is then tied to that name).
//!
//! A remote URL may carry a credential (`https://user:token@host/…`, `?private_token=…`): the
//! identity keeps only the host and the path, so no credential reaches an input, a binding, a
//! manifest or a log.

use std::path::Path;

use crate::git::{self, GitError};

/// Longest repository identity kept.
pub const MAX_IDENTITY: usize = 256;

/// Whether `c` may appear in a repository identity: what a host, a port and a path of a URL
/// are written with, and nothing that can hide or delimit anything else (no `@`, `?`, `#`,
/// `%`, space or control character).
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '/' | ':' | '+' | '-')
}

/// Checks a repository identity (a configured `repo`, or a normalised URL): 1 to
/// [`MAX_IDENTITY`] bytes of `[A-Za-z0-9._~/:+-]`, starting with a letter, a digit or `/` (so
/// that `{repo}` on a command line is never read as an option).
pub fn check_identity(value: &str) -> Result<(), IdentityError> {
    let Some(first) = value.chars().next() else {
        return Err(IdentityError::Empty);
    };
    if !(first.is_ascii_alphanumeric() || first == '/') {
        return Err(IdentityError::Start);
    }
    if value.len() > MAX_IDENTITY {
        return Err(IdentityError::TooLong);
    }
    if !value.chars().all(allowed) {
        return Err(IdentityError::Character);
    }
    Ok(())
}

/// Why a repository identity is refused ([`check_identity`]); said after the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("is empty")]
    Empty,
    #[error("does not start with a letter, a digit or `/`")]
    Start,
    #[error("is longer than {MAX_IDENTITY} bytes")]
    TooLong,
    #[error("holds a character outside [A-Za-z0-9._~/:+-]")]
    Character,
}

/// The identity of the repository a remote URL names: the host (lowercased, without user,
/// password and default port) and the path (without a trailing `/` or `.git`, query and
/// fragment), joined by `/`; so `https://user:token@GitHub.com/acme/widgets.git`,
/// `ssh://git@github.com:22/acme/widgets`, `git@github.com:acme/widgets.git` and
/// `git://github.com/acme/widgets` are all `github.com/acme/widgets`. A local path
/// (`/srv/git/widgets.git`, `file:///srv/git/widgets`) is the path, `.git` removed. `None` when
/// what is left is not a valid identity ([`check_identity`]).
pub fn remote_identity(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            // `file:///path` and `file://localhost/path`.
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            (None, path)
        } else {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            (Some(authority), path)
        }
    } else if let Some((authority, path)) = scp_like(url) {
        (Some(authority), path)
    } else {
        (None, url)
    };
    // Query and fragment may carry a token; neither names the repository.
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_end_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    let identity = match host {
        None => path.to_owned(),
        Some(authority) => {
            // Everything up to the last `@` is a user and maybe a password.
            let host_port = authority.rsplit('@').next().unwrap_or_default();
            let host_port = match host_port.rsplit_once(':') {
                Some((host, "22" | "80" | "443" | "9418" | "")) => host,
                _ => host_port,
            };
            let path = path.trim_start_matches('/');
            let host = host_port.to_ascii_lowercase();
            if path.is_empty() {
                host
            } else {
                format!("{host}/{path}")
            }
        }
    };
    check_identity(&identity).ok().map(|()| identity)
}

/// `[user@]host:path`, git's scp-like syntax: a `:` before any `/`.
fn scp_like(url: &str) -> Option<(&str, &str)> {
    let colon = url.find(':')?;
    if url[..colon].contains('/') || colon == 0 {
        return None;
    }
    Some((&url[..colon], &url[colon + 1..]))
}

/// The `origin` remote's URL, as the repository's configuration holds it; `None` when there is
/// no `origin`. Bounded like every git call.
pub fn origin_url(checkout: &Path) -> Result<Option<String>, GitError> {
    match git::run_ok(checkout, "config", ["--get", "remote.origin.url"]) {
        Ok(out) => Ok(Some(String::from_utf8_lossy(&out).trim().to_owned())),
        // `git config --get` exits 1 when the key is not set.
        Err(GitError::Failed { code: Some(1), .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Where the identity came from, for what the run says about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepoSource {
    /// `forge "local" repo="…"`.
    Configured,
    /// The `origin` remote.
    Origin,
    /// The checkout folder's name; the reason no remote was used.
    Folder(String),
}

/// The repository identity of `checkout`: `configured` when given (already checked), else the
/// `origin` remote's, else `folder` (the sanitised folder name).
pub fn repo_identity(
    checkout: &Path,
    configured: Option<&str>,
    folder: &str,
) -> (String, RepoSource) {
    if let Some(name) = configured {
        return (name.to_owned(), RepoSource::Configured);
    }
    match origin_url(checkout) {
        Ok(Some(url)) => match remote_identity(&url) {
            Some(identity) => (identity, RepoSource::Origin),
            // Never echo the URL: it may hold a credential.
            None => (
                folder.to_owned(),
                RepoSource::Folder(
                    "the `origin` remote's URL does not reduce to a host and path of [A-Za-z0-9._~/:+-]"
                        .to_owned(),
                ),
            ),
        },
        Ok(None) => (
            folder.to_owned(),
            RepoSource::Folder("no `origin` remote".to_owned()),
        ),
        Err(e) => (
            folder.to_owned(),
            RepoSource::Folder(format!("the `origin` remote cannot be read ({e})")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_one_repository_agree() {
        for url in [
            "https://github.com/acme/widgets",
            "https://github.com/acme/widgets.git",
            "https://github.com/acme/widgets/",
            "https://user:s3cret@GitHub.com/acme/widgets.git",
            "https://x-access-token@github.com:443/acme/widgets.git?private_token=s3cret#frag",
            "http://github.com/acme/widgets",
            "ssh://git@github.com/acme/widgets.git",
            "ssh://git@github.com:22/acme/widgets",
            "git://github.com/acme/widgets.git",
            "git@github.com:acme/widgets.git",
            "github.com:acme/widgets",
            "  git@github.com:acme/widgets.git\n",
        ] {
            assert_eq!(
                remote_identity(url).as_deref(),
                Some("github.com/acme/widgets"),
                "{url}"
            );
        }
    }

    #[test]
    fn other_ports_and_local_paths() {
        assert_eq!(
            remote_identity("ssh://git@git.example.com:2222/team/app.git").as_deref(),
            Some("git.example.com:2222/team/app")
        );
        assert_eq!(
            remote_identity("/srv/git/widgets.git").as_deref(),
            Some("/srv/git/widgets")
        );
        assert_eq!(
            remote_identity("file:///srv/git/widgets.git/").as_deref(),
            Some("/srv/git/widgets")
        );
    }

    #[test]
    fn what_is_not_an_identity_is_none() {
        for url in [
            "",
            "https://",
            "/srv/my repo",
            "/srv/caf\u{e9}",
            "https://host/a%20b",
            "ssh://host/a\nb",
        ] {
            assert_eq!(remote_identity(url), None, "{url:?}");
        }
        let long = format!("https://host/{}", "a".repeat(MAX_IDENTITY));
        assert_eq!(remote_identity(&long), None);
    }

    #[test]
    fn no_credential_survives() {
        for url in [
            "https://user:pa55word@host/a/b.git",
            "https://pa55word@host/a/b",
            "ssh://user:pa55word@host:2222/a/b",
            "user:pa55word@host:a/b",
            "https://host/a/b?token=pa55word",
            "https://host/a/b#pa55word",
        ] {
            let identity = remote_identity(url).unwrap_or_default();
            assert!(!identity.contains("pa55word"), "{url} -> {identity}");
        }
    }

    #[test]
    fn configured_names_are_checked() {
        assert!(check_identity("acme/widgets").is_ok());
        assert!(check_identity("").is_err());
        assert!(check_identity("a b").is_err());
        assert!(check_identity("user@host").is_err());
        assert!(check_identity("-rf").is_err());
        assert!(check_identity("../elsewhere").is_err());
        assert_eq!(remote_identity("--upload-pack=x"), None);
        assert!(check_identity(&"a".repeat(MAX_IDENTITY + 1)).is_err());
    }
}
