//! docs/reviewers.md against what a reviewer program gets: the variables of its environment are
//! exactly the documented ones (and the stage's declared ones), for a `command` reviewer and for
//! a model reviewer's CLI.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::{Repo, root};

/// Set by a shell on its own start, not by reviewflow.
const SHELL_OWN: &[&str] = &["PWD", "SHLVL", "_"];

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/reviewers.md")).expect("docs/reviewers.md")
}

/// The text of `doc` from `start` to the next line that begins with `end`.
fn section<'a>(doc: &'a str, start: &str, end: &str) -> &'a str {
    let from = doc
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} in the doc"));
    let rest = &doc[from..];
    let to = rest[start.len()..]
        .find(end)
        .map_or(rest.len(), |i| i + start.len());
    &rest[..to]
}

/// Every backquoted upper-case variable name in `text` (`LANG=C.UTF-8` names `LANG`), but
/// those a shell sets itself.
fn names(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|w| w.split_once('=').map_or(w, |(name, _)| name))
        .filter(|w| !SHELL_OWN.contains(w))
        .filter(|w| {
            !w.is_empty()
                && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        })
        .map(str::to_owned)
        .collect()
}

/// Runs `pipeline` in a fresh repository with one change, `bin` first in `PATH`; the names of
/// the variables the reviewer printed (`VAR=` lines of its standard error, on the console).
fn printed_names(pipeline: &str, bin: Option<&Path>, env: &[(&str, &str)]) -> BTreeSet<String> {
    let repo = Repo::init();
    repo.commit("review.kdl", pipeline, "pipeline");
    repo.commit("src/lib.rs", "pub fn f() {}\n", "change");
    let mut path = std::ffi::OsString::new();
    if let Some(bin) = bin {
        path.push(bin);
        path.push(":");
    }
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let out = crate::support::command()
        .args(["run", "review.kdl"])
        .current_dir(repo.path())
        .env("PATH", path)
        .env("REVIEWFLOW_TEST_INHERITED", "must-not-reach-the-reviewer")
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    let printed: BTreeSet<String> = log
        .lines()
        .filter_map(|l| {
            l.split_once("review │ ")?
                .1
                .split_once("=ENV=")
                .map(|(n, _)| n)
        })
        .map(str::to_owned)
        .filter(|n| !SHELL_OWN.contains(&n.as_str()))
        .collect();
    assert!(
        printed.contains("PATH"),
        "the reviewer printed its environment:\n{log}"
    );
    printed
}

/// A shell script that prints `NAME=ENV=` for each variable it was given, then fails.
const PRINT_ENV: &str = r#"for v in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do echo "$v=ENV=" >&2; done; exit 1"#;

#[test]
fn a_command_reviewer_gets_exactly_the_documented_environment() {
    let pipeline = format!(
        r#"pipeline "env"
forge "local"
stage "gather" uses="std/gather"
stage "review" uses="std/review" {{
    reviewer "command"
    command "sh" "-c" "{}"
    untrusted "gather.diff"
    env "DECLARED" "yes"
    tries 1
}}
"#,
        PRINT_ENV.replace('\\', "\\\\").replace('"', "\\\"")
    );
    let printed = printed_names(&pipeline, None, &[]);
    let doc = doc();
    let table = section(&doc, "### What the program gets", "A stage may not declare");
    let mut documented = names(table);
    // The table's last row is the declared variables.
    documented.insert("DECLARED".into());
    // A fresh try: the resumed conversation's variables are absent.
    documented.remove("REVIEWFLOW_RESUME");
    documented.remove("REVIEWFLOW_RESUME_ID");
    // Named in the prose of the table, not given: `HOME`, `USER`.
    documented.remove("HOME");
    documented.remove("USER");
    assert_eq!(
        printed, documented,
        "docs/reviewers.md, What the program gets"
    );
}

#[test]
fn a_model_reviewers_cli_gets_exactly_the_documented_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    // A stand-in for Claude Code: answers `--version`, then prints its environment.
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo '2.1.197 (Claude Code)'; exit 0; fi\n{PRINT_ENV}\n"
    );
    let program = bin.join("claude");
    std::fs::write(&program, script).expect("write");
    let mut perms = std::fs::metadata(&program).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&program, perms).expect("chmod");
    let pipeline = r#"pipeline "env"
forge "local"
secret "anthropic-key" env="ANTHROPIC_API_KEY" {
    visible-to "review"
}
stage "gather" uses="std/gather"
stage "review" uses="std/review" {
    reviewer "claude"
    secret-env "ANTHROPIC_API_KEY" "anthropic-key"
    untrusted "gather.diff"
    env "DISABLE_TELEMETRY" "1"
    tries 1
}
"#;
    let printed = printed_names(
        pipeline,
        Some(&bin),
        &[(
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-docs-reviewers-test-0123456789abcdef",
        )],
    );
    let doc = doc();
    let bullet = section(&doc, "- from a cleared environment:", "- confined like");
    let mut documented = names(bullet);
    // Codex's own, and the declared variable this pipeline gives.
    documented.remove("CODEX_HOME");
    documented.insert("DISABLE_TELEMETRY".into());
    // Claude Code's credential stand-in, named in the bullet as "a stand-in for its credential".
    documented.insert("ANTHROPIC_API_KEY".into());
    assert_eq!(printed, documented, "docs/reviewers.md, How a try runs");
}
