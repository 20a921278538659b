//! Keeping only the files of a diff that lie under a path prefix.

use super::parse;

/// The sections of `diff` whose old or new path lies under `prefix`, as diff text.
///
/// The prefix is a directory or file path relative to the repository root: `src` keeps `src`
/// and `src/…` but not `srcfoo/…`. Leading `./` and `/` and trailing `/` are ignored; an empty
/// prefix or `.` keeps every file. A rename across the boundary is kept (one side is under it).
/// Text before the first file (a commit message) is dropped. Each kept section is copied byte
/// for byte, so the result parses to the same files.
pub fn cut_to_path(diff: &[u8], prefix: &str) -> Vec<u8> {
    let prefix = normalise(prefix);
    let parsed = parse(diff);
    let mut out = Vec::new();
    for f in &parsed.files {
        let keep = [f.old_path.as_deref(), f.new_path.as_deref()]
            .into_iter()
            .flatten()
            .any(|p| under(p, prefix));
        if keep && let Some(section) = diff.get(f.span.clone()) {
            out.extend_from_slice(section);
        }
    }
    out
}

fn normalise(prefix: &str) -> &str {
    let mut p = prefix;
    loop {
        let next = p.trim_start_matches("./").trim_start_matches('/');
        if next == p {
            break;
        }
        p = next;
    }
    let p = p.trim_end_matches('/');
    if p == "." { "" } else { p }
}

fn under(path: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_rules() {
        let cases = [
            ("src", "src/a.rs", true),
            ("src/", "src/a.rs", true),
            ("./src", "src/a.rs", true),
            ("/src", "src/a.rs", true),
            ("src", "src", true),
            ("src", "srcfoo/a.rs", false),
            ("src/a", "src/a.rs", false),
            ("", "x", true),
            (".", "x", true),
            ("./", "x", true),
        ];
        for (prefix, path, want) in cases {
            assert_eq!(under(path, normalise(prefix)), want, "{prefix} {path}");
        }
    }
}
