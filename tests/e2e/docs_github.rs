//! docs/github.md names every variable of the runner that `reviewflow run` reads: the table
//! "What the run reads from the runner" has a row for each name the code reads through its
//! environment look-ups (`lookup("…")`, `var("…")`, `number("…")`, a store's `(open.env)("…")`).

use std::path::Path;

use crate::support::root;

/// The `GITHUB_…` and `RUNNER_…` names read from the environment in the Rust files below `dir`.
fn read_names(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            read_names(&path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        for prefix in ["(\"GITHUB_", "(\"RUNNER_"] {
            let mut at = 0;
            while let Some(found) = text[at..].find(prefix) {
                let start = at + found;
                at = start + prefix.len();
                let before = &text[..start];
                if !["lookup", "var", "number", "env)"]
                    .iter()
                    .any(|f| before.ends_with(f))
                {
                    continue;
                }
                let name: String = text[start + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
    }
}

#[test]
fn every_runner_variable_run_reads_is_documented() {
    let mut names = Vec::new();
    for dir in ["src", "engine/src", "stdlib/src"] {
        read_names(&root().join(dir), &mut names);
    }
    assert!(
        names.len() >= 10,
        "the scan found too few look-ups to be right: {names:?}"
    );
    let doc = std::fs::read_to_string(root().join("docs/github.md")).expect("docs/github.md");
    let table = doc
        .split("## What the run reads from the runner")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/github.md has the section");
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !table.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "read by `run` but not in docs/github.md's table of the runner's variables: {missing:?}"
    );
}
