//! docs/checks.md against the engine: a section for every registered check, and every example in
//! it behaves as its `<!-- expect: … -->` marker says.

use reviewflow_engine::check::ALL;

use crate::support::{reviewflow, root};

const DOC: &str = "docs/checks.md";
/// The `##` sections that are not checks, in their order at the top.
const PREAMBLE: &[&str] = &["Principles", "Reading findings"];

fn doc() -> String {
    std::fs::read_to_string(root().join(DOC)).expect("docs/checks.md exists")
}

/// A fenced code block: where it starts (1-based line of the fence), its language, the marker on
/// the nearest non-blank line above it, the `##` section it is in, and its text.
struct Block {
    line: usize,
    lang: String,
    expect: Option<String>,
    section: String,
    text: String,
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut previous = "";
    let mut open: Option<Block> = None;
    for (i, line) in doc.lines().enumerate() {
        if let Some(block) = open.as_mut() {
            if line.trim_start().starts_with("```") {
                out.extend(open.take());
            } else {
                block.text.push_str(line);
                block.text.push('\n');
            }
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.trim().to_string();
        }
        if let Some(lang) = line.trim_start().strip_prefix("```") {
            let expect = previous
                .trim()
                .strip_prefix("<!-- expect:")
                .and_then(|m| m.strip_suffix("-->"))
                .map(|m| m.trim().to_string());
            open = Some(Block {
                line: i + 1,
                lang: lang.trim().to_string(),
                expect,
                section: section.clone(),
                text: String::new(),
            });
            continue;
        }
        if !line.trim().is_empty() {
            previous = line;
        }
    }
    assert!(open.is_none(), "{DOC}: a code block is never closed");
    out
}

/// The `##` sections: heading and body.
fn sections(doc: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in doc.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            out.push((heading.trim().to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

#[test]
fn every_check_has_a_complete_section() {
    let doc = doc();
    let sections = sections(&doc);
    for check in ALL {
        let id = check.id();
        let found: Vec<&(String, String)> = sections.iter().filter(|(h, _)| h == id).collect();
        assert_eq!(found.len(), 1, "{DOC} needs exactly one `## {id}` section");
        let body = &found[0].1;
        let severity = format!("**Severity:** {}", check.severity().name());
        for part in [
            "**Proves:**",
            severity.as_str(),
            "**Fix:**",
            "**Suppress:**",
            &format!("allow \"{id}\" finding=\""),
            "--no-suppress",
            &format!("**Principle:** {}.", check.principle()),
            &format!("<!-- expect: {id} -->"),
            "<!-- expect: clean -->",
        ] {
            assert!(body.contains(part), "`## {id}` in {DOC} lacks {part:?}");
        }
    }
    for (heading, _) in &sections {
        assert!(
            PREAMBLE.contains(&heading.as_str()) || ALL.iter().any(|c| c.id() == heading),
            "`## {heading}` in {DOC} is not a check id"
        );
    }
    let headings: Vec<&str> = sections.iter().map(|(h, _)| h.as_str()).collect();
    assert!(
        doc.starts_with("# Checks") && headings.starts_with(PREAMBLE),
        "{DOC} starts with the principles, then how to read findings"
    );
}

#[test]
fn every_example_behaves_as_marked() {
    let doc = doc();
    let blocks = blocks(&doc);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut checked = 0;
    for (n, block) in blocks.iter().enumerate() {
        let at = format!("{DOC}:{}", block.line);
        if block.lang != "kdl" {
            assert!(
                block.expect.is_none(),
                "{at}: a marked example must be a ```kdl block"
            );
            continue;
        }
        let expect = block
            .expect
            .as_deref()
            .unwrap_or_else(|| panic!("{at}: a ```kdl block needs `<!-- expect: … -->` above it"));
        let file = dir.path().join(format!("example-{n}.kdl"));
        std::fs::write(&file, &block.text).expect("write the example");
        let path = file.to_str().expect("utf-8 path");
        let run = reviewflow(&["check", "--format", "json", "--fail-on", "never", path]);
        let json: serde_json::Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{at}: no JSON ({e}):\n{}", run.transcript()));
        // What a `trusted` declaration lifts is shown as allowed, and is not the example's.
        let findings: Vec<serde_json::Value> = json["files"][0]["findings"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|f| {
                !f["suppressed"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("trusted "))
            })
            .collect();
        let ids: Vec<&str> = findings
            .iter()
            .map(|f| f["check"].as_str().unwrap_or_default())
            .collect();
        if expect == "clean" {
            assert!(ids.is_empty(), "{at}: expected clean, got {findings:#?}");
            assert_eq!(run.code, 0, "{at}:\n{}", run.transcript());
        } else {
            assert!(
                ALL.iter().any(|c| c.id() == expect),
                "{at}: `expect: {expect}` names no check"
            );
            assert_eq!(
                expect, block.section,
                "{at}: a failing example belongs in its check's section"
            );
            assert!(!ids.is_empty(), "{at}: expected `{expect}`, got nothing");
            assert!(
                ids.iter().all(|id| *id == expect),
                "{at}: expected only `{expect}`, got {ids:?}"
            );
            let code = if expect == "syntax" { 2 } else { 0 };
            assert_eq!(run.code, code, "{at}:\n{}", run.transcript());
        }
        checked += 1;
    }
    assert!(
        checked >= 2 * ALL.len(),
        "{DOC}: {checked} examples checked, one failing and one passing per check wanted"
    );
}

/// The README's list of checks names every registered check, once.
#[test]
fn the_readme_lists_every_check() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let list = readme
        .split("## Checks\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").find(|p| !p.trim().is_empty()))
        .expect("a `## Checks` section with a paragraph");
    for check in ALL {
        let named = format!("`{}`", check.id());
        assert_eq!(
            list.matches(&named).count(),
            1,
            "README.md's `## Checks` lists {named} once"
        );
    }
}

/// The table under "Principles" lists every check once, in the row of the principle it applies.
#[test]
fn the_principles_table_maps_every_check() {
    let doc = doc();
    let sections = sections(&doc);
    let (_, body) = sections
        .iter()
        .find(|(h, _)| h == "Principles")
        .expect("a Principles section");
    for principle in reviewflow_engine::check::Principle::ALL {
        let head = format!("| {principle} | ");
        let row = body
            .lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("{DOC}: no table row for principle {principle}"));
        let listed: Vec<&str> = row[head.len()..]
            .split(", ")
            .filter_map(|cell| cell.split('`').nth(1))
            .collect();
        let expected: Vec<&str> = ALL
            .iter()
            .filter(|c| c.principle() == principle)
            .map(|c| c.id())
            .collect();
        let mut a = listed.clone();
        let mut b = expected.clone();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{DOC}: the row of principle {principle}");
    }
}

/// `## limit`'s table gives every bound a contract declares, as the compiler applies it: each
/// setting with an upper end has a row naming it with its range.
#[test]
fn the_limit_section_gives_every_bound_of_the_registry() {
    use reviewflow_engine::contract::{Bound, MAX_TRIES, Unit, ValueType};
    use reviewflow_stdlib::kinds::store_github_artifacts::MAX_RUN_LOOKUPS;
    let doc = doc();
    let section = sections(&doc)
        .into_iter()
        .find(|(id, _)| id == "limit")
        .map(|(_, body)| body)
        .expect("a `## limit` section");
    let range = |b: &Bound| {
        let one = |v: u64| match b.unit {
            Unit::Count => v.to_string(),
            Unit::Bytes if v >= 1 << 20 => format!("{} MiB", v >> 20),
            Unit::Bytes => v.to_string(),
            Unit::Millis => format!(
                "`\"{}\"`",
                reviewflow_engine::duration::format_duration_ms(v)
            ),
        };
        format!("{} to {}", one(b.min), one(b.max))
    };
    let registry = reviewflow_stdlib::registry();
    let mut bounds: Vec<(String, Bound)> = vec![
        ("max-tries".into(), MAX_TRIES),
        ("max-run-lookups".into(), MAX_RUN_LOOKUPS),
    ];
    let bounded = |ty: &ValueType| match ty {
        ValueType::Int(b) | ValueType::Duration(b) => Some(*b),
        _ => None,
    };
    for contract in registry.contracts() {
        for child in &contract.children {
            bounds.extend(
                child
                    .args
                    .iter()
                    .filter_map(bounded)
                    .map(|b| (child.name.clone(), b)),
            );
            bounds.extend(
                child
                    .props
                    .iter()
                    .filter_map(|p| Some((p.name.clone(), bounded(&p.ty)?))),
            );
        }
    }
    for forge in registry.forges() {
        bounds.extend(
            forge
                .props
                .iter()
                .filter_map(|p| Some((p.name.clone(), bounded(&p.ty)?))),
        );
    }
    assert!(bounds.len() >= 9, "{bounds:?}");
    for (name, bound) in bounds.iter().filter(|(_, b)| b.max != u64::MAX) {
        let row = section.lines().find(|l| {
            l.starts_with("| ") && l.contains(&format!("`{name}")) && l.contains(&range(bound))
        });
        assert!(
            row.is_some(),
            "`## limit` has no row for `{name}` with {}",
            range(bound)
        );
    }
}
