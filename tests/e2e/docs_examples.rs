//! Every `kdl` example a user can copy from README.md and docs/ is checked: each block carries
//! a marker as in docs/language.md (`<!-- check: clean -->`, `<!-- check: <check-id> -->`, or
//! `<!-- check: fragment -->` for a part of a file), and each whole file is checked through the
//! binary. docs/checks.md (`<!-- expect: … -->`, docs_checks.rs), docs/language.md
//! (docs_language.rs) and docs/lenses.md (lenses.rs) have tests of their own. The README's
//! pipeline, a shortened `examples/review.kdl`, says only what the example says.

use crate::docs_language::{check_marked, fenced_blocks};
use crate::support::root;

/// The documents whose examples other tests check.
const TESTED_ELSEWHERE: &[&str] = &["checks.md", "language.md", "lenses.md"];

fn documents() -> Vec<(String, String)> {
    let mut out = vec![(
        "README.md".to_owned(),
        std::fs::read_to_string(root().join("README.md")).expect("README.md"),
    )];
    let mut docs: Vec<_> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    for path in docs {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if TESTED_ELSEWHERE.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a doc");
        out.push((format!("docs/{name}"), text));
    }
    out
}

#[test]
fn every_kdl_example_of_the_docs_is_marked_and_checked() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        let blocks: Vec<_> = fenced_blocks(&text)
            .into_iter()
            .filter(|b| b.lang == "kdl")
            .collect();
        let (failed, n) = check_marked(&name, &blocks);
        failures.extend(failed);
        checked += n;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(checked >= 1, "{checked} whole pipelines checked");
}

/// A line of a pipeline as it reads: without its comment and surrounding space.
fn meaning(line: &str) -> &str {
    let code = match line.find("//") {
        // `//` inside a string (a URL) is not a comment: a quote count before it says.
        Some(i) if line[..i].matches('"').count().is_multiple_of(2) => &line[..i],
        _ => line,
    };
    code.trim()
}

#[test]
fn the_readme_pipeline_is_a_shortened_example() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let example = std::fs::read_to_string(root().join("examples/review.kdl")).expect("the example");
    let block = fenced_blocks(&readme)
        .into_iter()
        .find(|b| b.lang == "kdl" && b.text.contains("pipeline \"enroll-review\""))
        .expect("the README shows the example's pipeline");
    let lines: Vec<&str> = example.lines().map(meaning).collect();
    let mut at = 0;
    for line in block.text.lines().map(meaning).filter(|l| !l.is_empty()) {
        // Each line in the order the example has it: nothing added, nothing reordered.
        let found = lines[at..].iter().position(|l| *l == line);
        let Some(i) = found else {
            panic!(
                "README.md:{}: `{line}` is not in examples/review.kdl after line {at}",
                block.line
            );
        };
        at += i + 1;
    }
}
