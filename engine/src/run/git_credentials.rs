//! Whether the checkout's git configuration holds a credential: a checkout step that persists
//! the job's token leaves it in `.git/config` as an `Authorization` header
//! (`http.<url>.extraheader = AUTHORIZATION: basic <base64 of user:token>`), or in a remote's URL
//! (`https://user:token@host/…`). `run` says so, naming the kind and the key, never the value.
//!
//! Only `<checkout>/.git/config` is read: opened with no link followed below the checkout, a
//! regular file, at most [`MAX_CONFIG`] bytes. A `.git` that is a file (a worktree or a
//! submodule) and files named by `include.path` are not followed: the warning is advice, not a
//! boundary (stages cannot reach `.git` where the sandbox holds).

use std::path::Path;

use crate::bounded::read_bounded;
use crate::nofollow::open_regular_beneath;

/// A git config larger than this is not read (a real one is a few hundred bytes).
const MAX_CONFIG: u64 = 1024 * 1024;

/// A user name this long, of letters and digits both, is a token rather than a name
/// (`https://ghp_…@git.example.com/`).
const TOKEN_AS_USER: usize = 20;

/// A warning, to print after `warning: `, when `<checkout>/.git/config` holds a credential; `None`
/// when it holds none, or cannot be read as a regular file within the bound.
pub(crate) fn git_config_credentials(checkout: &Path) -> Option<String> {
    let file = open_regular_beneath(checkout, Path::new(".git/config")).ok()?;
    let bytes = read_bounded(file, MAX_CONFIG).ok()?;
    let kinds = credentials_in(&String::from_utf8_lossy(&bytes));
    if kinds.is_empty() {
        return None;
    }
    Some(format!(
        "the checkout's .git/config holds a credential ({}): anything that reads the checkout's .git can use it; check out without persisting credentials, or remove them, before the run",
        kinds.join("; ")
    ))
}

/// What holds a credential, one phrase each, in file order without repeats: the kind and the key
/// with its subsection elided (a subsection may itself be a URL holding the credential).
fn credentials_in(config: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut push = |phrase: String| {
        if !found.contains(&phrase) {
            found.push(phrase);
        }
    };
    let mut section = String::new();
    let mut subsection = false;
    for line in logical_lines(config) {
        let mut rest = line.trim_start();
        if rest.starts_with('[') {
            let Some(end) = header_end(rest) else {
                continue;
            };
            let header = &rest[1..end];
            (section, subsection) = parse_header(header);
            // A header's own text may be a URL with a credential: `[url "https://u:t@h/"]`.
            if url_has_credential(header) {
                push(format!(
                    "a URL with a password or token in its user part (a `{}.<url>` section)",
                    section
                ));
            }
            rest = rest[end + 1..].trim_start();
        }
        let Some((key, value)) = key_value(rest) else {
            continue;
        };
        let name = if subsection {
            format!("{section}.<{}>.{key}", placeholder(&section))
        } else {
            format!("{section}.{key}")
        };
        if section == "http" && key == "extraheader" && is_authorization(&value) {
            push(format!("an Authorization header in `{name}`"));
        } else if url_has_credential(&value) {
            push(format!(
                "a URL with a password or token in its user part (`{name}`)"
            ));
        }
    }
    found
}

/// What a subsection stands for in a key's name.
fn placeholder(section: &str) -> &'static str {
    match section {
        "http" | "url" | "credential" => "url",
        _ => "name",
    }
}

/// The lines of `config`, a line ending in an unescaped `\` joined with the next.
fn logical_lines(config: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for raw in config.lines() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let trailing = raw.len() - raw.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            current.push_str(&raw[..raw.len() - 1]);
            continue;
        }
        current.push_str(raw);
        out.push(std::mem::take(&mut current));
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Where the header that `line` starts with ends (its `]`), quotes respected.
fn header_end(line: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ']' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// `http "https://x/"` → (`http`, true); `http.https://x/` (the old form) → (`http`, true);
/// `core` → (`core`, false). Section names are case-insensitive.
fn parse_header(header: &str) -> (String, bool) {
    let header = header.trim();
    if let Some((name, _)) = header.split_once(char::is_whitespace) {
        return (name.to_ascii_lowercase(), true);
    }
    match header.split_once('.') {
        Some((name, _)) => (name.to_ascii_lowercase(), true),
        None => (header.to_ascii_lowercase(), false),
    }
}

/// `key = value` (or a bare `key`, a boolean): the key in lower case, the value with its quotes
/// and escapes undone and a trailing comment dropped.
fn key_value(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with(['#', ';']) {
        return None;
    }
    let (key, raw) = match line.split_once('=') {
        Some((k, v)) => (k.trim(), v),
        None => (line, ""),
    };
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return None;
    }
    Some((key.to_ascii_lowercase(), unquote(raw)))
}

fn unquote(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim_end().to_string()
}

/// An `Authorization:` header (any scheme: basic, bearer, token).
fn is_authorization(value: &str) -> bool {
    let value = value.trim_start();
    value
        .get(..14)
        .is_some_and(|head| head.eq_ignore_ascii_case("authorization:"))
}

/// Whether `text` holds a URL whose user part carries a password (`user:secret@`) or is itself a
/// token (`ghp_…@`).
fn url_has_credential(text: &str) -> bool {
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let after = &rest[at + 3..];
        let authority_end = after.find(['/', '?', '#', '"', ' ']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        if let Some((userinfo, _host)) = authority.rsplit_once('@') {
            let credential = match userinfo.split_once(':') {
                Some((_, password)) => !password.is_empty(),
                None => looks_like_token(userinfo),
            };
            if credential {
                return true;
            }
        }
        rest = after;
    }
    false
}

fn looks_like_token(user: &str) -> bool {
    user.len() >= TOKEN_AS_USER
        && user.bytes().any(|b| b.is_ascii_alphabetic())
        && user.bytes().any(|b| b.is_ascii_digit())
        && user
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a checkout step that persists credentials writes (a fake token).
    const PERSISTED: &str = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://git.example.com/acme/widgets\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[http \"https://git.example.com/\"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX0ZBS0UwMTIzNDU2Nzg5YWJjZGVmZ2hpamtsbW5vcHFyc3R1dg==\n";

    fn checkout_with(config: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(".git")).expect("mkdir .git");
        std::fs::write(dir.path().join(".git/config"), config).expect("write config");
        dir
    }

    #[test]
    fn a_persisted_authorization_header_is_named_never_shown() {
        let dir = checkout_with(PERSISTED);
        let warning = git_config_credentials(dir.path()).expect("a warning");
        assert_eq!(
            warning,
            "the checkout's .git/config holds a credential (an Authorization header in `http.<url>.extraheader`): anything that reads the checkout's .git can use it; check out without persisting credentials, or remove them, before the run"
        );
        assert!(!warning.contains("eC1hY2Nl"), "{warning}");
        assert!(!warning.contains("git.example.com"), "{warning}");
    }

    #[test]
    fn an_ordinary_config_holds_none() {
        let dir = checkout_with(
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://git.example.com/acme/widgets\n[remote \"mirror\"]\n\turl = ssh://git@example.com/acme.git\n[http]\n\textraheader = X-Trace: on\n",
        );
        assert_eq!(git_config_credentials(dir.path()), None);
    }

    #[test]
    fn no_config_no_git_and_no_checkout_hold_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(git_config_credentials(dir.path()), None);
        std::fs::create_dir(dir.path().join(".git")).expect("mkdir");
        assert_eq!(git_config_credentials(dir.path()), None);
        assert_eq!(git_config_credentials(&dir.path().join("missing")), None);
    }

    #[test]
    fn urls_with_a_password_or_a_token_as_user() {
        for (config, key) in [
            (
                "[remote \"origin\"]\n\turl = https://x-access-token:ghs_FAKE0123456789@git.example.com/a/b\n",
                "`remote.<name>.url`",
            ),
            (
                "[remote \"origin\"]\n  pushurl = \"https://ghp_FAKE0123456789abcdefXYZ@git.example.com/a/b\"\n",
                "`remote.<name>.pushurl`",
            ),
            (
                "[url \"https://oauth2:glpat-FAKE0123456789@git.example.org/\"]\n\tinsteadOf = https://git.example.org/\n",
                "a `url.<url>` section",
            ),
        ] {
            let dir = checkout_with(config);
            let warning = git_config_credentials(dir.path()).expect("a warning");
            assert!(
                warning.contains("a URL with a password or token"),
                "{warning}"
            );
            assert!(warning.contains(key), "{config}: {warning}");
            assert!(!warning.contains("FAKE"), "{warning}");
        }
    }

    #[test]
    fn keys_are_case_insensitive_and_headers_may_share_a_line() {
        let kinds =
            credentials_in("[HTTP] extraHeader = \"Authorization: Bearer FAKE\" ; set by CI\n");
        assert_eq!(kinds, ["an Authorization header in `http.extraheader`"]);
        let kinds = credentials_in(
            "[http \"https://h/\"]\n\tEXTRAHEADER = authorization: basic Zm9v\\\n\n",
        );
        assert_eq!(
            kinds,
            ["an Authorization header in `http.<url>.extraheader`"]
        );
    }

    #[test]
    fn each_kind_is_named_once_in_file_order() {
        let config = format!(
            "{PERSISTED}[remote \"fork\"]\n\turl = https://u:p@example.com/x\n[remote \"up\"]\n\turl = https://u:q@example.com/y\n"
        );
        assert_eq!(
            credentials_in(&config),
            [
                "an Authorization header in `http.<url>.extraheader`",
                "a URL with a password or token in its user part (`remote.<name>.url`)",
            ]
        );
    }

    #[test]
    fn plain_users_are_not_credentials() {
        assert!(!url_has_credential("https://octocat@git.example.com/a/b"));
        assert!(!url_has_credential("ssh://git@git.example.com/a/b"));
        assert!(!url_has_credential("https://user:@example.com/"));
        assert!(!url_has_credential("https://example.com/a@b"));
        assert!(url_has_credential("see https://u:p@example.com and more"));
    }

    #[test]
    fn a_linked_or_oversized_config_is_not_read() {
        let dir = checkout_with("");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, PERSISTED).expect("write");
        let config = dir.path().join(".git/config");
        std::fs::remove_file(&config).expect("rm");
        std::os::unix::fs::symlink(&target, &config).expect("symlink");
        assert_eq!(git_config_credentials(dir.path()), None);

        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("real-git")).expect("mkdir");
        std::fs::write(dir.path().join("real-git/config"), PERSISTED).expect("write");
        std::os::unix::fs::symlink(dir.path().join("real-git"), dir.path().join(".git"))
            .expect("symlink");
        assert_eq!(git_config_credentials(dir.path()), None);

        let big = format!("{PERSISTED}{}", "#\n".repeat(MAX_CONFIG as usize));
        let dir = checkout_with(&big);
        assert_eq!(git_config_credentials(dir.path()), None);
    }
}
