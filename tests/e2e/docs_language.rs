//! `docs/language.md` is tested, so the reference cannot drift from the compiler:
//!
//! - every ```kdl block carries a marker on the line before it: `<!-- check: clean -->` (checks
//!   with no finding at all), `<!-- check: <check-id> -->` (exactly one finding, of that check)
//!   or `<!-- check: fragment -->` (not a whole file; not checked). Each block is written to a
//!   file and run through the binary as a user would.
//! - the tables of each stage kind are compared with the kind's contract, the very data the
//!   engine checks pipelines against.

use std::fmt::Write as _;

use reviewflow_engine::contract::{
    ChildSpec, Effect, FallbackValue, LabelAdd, LabelKind, LabelRule, Propagate, StageContract,
    ValueType,
};

use crate::support::{reviewflow, root};

const DOC: &str = "docs/language.md";

fn doc_text() -> String {
    std::fs::read_to_string(root().join(DOC)).expect("docs/language.md exists")
}

/// One fenced block of the document.
pub(crate) struct Block {
    /// 1-based line of the opening fence.
    pub(crate) line: usize,
    pub(crate) lang: String,
    /// The `<!-- check: … -->` marker on the nearest non-blank line above the fence.
    pub(crate) marker: Option<String>,
    pub(crate) text: String,
}

pub(crate) fn fenced_blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = doc.lines().enumerate();
    let mut last_non_blank: Option<&str> = None;
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim();
        let Some(info) = trimmed.strip_prefix("```") else {
            if !trimmed.is_empty() {
                last_non_blank = Some(trimmed);
            }
            continue;
        };
        let marker = last_non_blank
            .and_then(|l| l.strip_prefix("<!-- check:"))
            .and_then(|l| l.strip_suffix("-->"))
            .map(|m| m.trim().to_string());
        let mut text = String::new();
        for (_, body) in lines.by_ref() {
            if body.trim() == "```" {
                break;
            }
            text.push_str(body);
            text.push('\n');
        }
        out.push(Block {
            line: index + 1,
            lang: info.trim().to_string(),
            marker,
            text,
        });
        last_non_blank = None;
    }
    out
}

#[test]
fn every_kdl_block_checks_as_its_marker_says() {
    let doc = doc_text();
    let blocks: Vec<Block> = fenced_blocks(&doc)
        .into_iter()
        .filter(|b| b.lang == "kdl")
        .collect();
    assert!(
        blocks.len() >= 20,
        "the reference shows its examples ({} kdl blocks)",
        blocks.len()
    );
    let (failures, checked) = check_marked(DOC, &blocks);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        checked >= 20,
        "most blocks are whole files that are checked ({checked})"
    );
}

/// Checks each kdl block of `blocks` (of the document `doc`) as its marker says, through the
/// binary; returns what failed and how many blocks were checked (fragments are not).
pub(crate) fn check_marked(doc: &str, blocks: &[Block]) -> (Vec<String>, usize) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut failures = Vec::new();
    let mut checked = 0;
    for block in blocks {
        let Some(marker) = block.marker.as_deref() else {
            failures.push(format!(
                "{doc}:{}: a kdl block without a `<!-- check: … -->` marker",
                block.line
            ));
            continue;
        };
        if marker == "fragment" {
            continue;
        }
        let path = dir.path().join(format!("line-{}.kdl", block.line));
        std::fs::write(&path, &block.text).expect("write the block");
        let path = path.to_string_lossy().into_owned();
        let run = reviewflow(&["check", "--format", "json", "--fail-on", "never", &path]);
        let json: serde_json::Value = match serde_json::from_str(&run.stdout) {
            Ok(json) => json,
            Err(e) => {
                failures.push(format!(
                    "{doc}:{}: no findings JSON ({e}):\n{}",
                    block.line,
                    run.transcript()
                ));
                continue;
            }
        };
        checked += 1;
        let findings = json["files"][0]["findings"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ids: Vec<&str> = findings
            .iter()
            .map(|f| f["check"].as_str().unwrap_or("?"))
            .collect();
        let ok = match marker {
            "clean" => findings.is_empty() && run.code == 0,
            id => ids == [id],
        };
        if !ok {
            let messages: Vec<String> = findings
                .iter()
                .map(|f| format!("  {}: {}", f["check"], f["message"]))
                .collect();
            failures.push(format!(
                "{doc}:{}: marked `{marker}`, found {} finding(s) (exit {}):\n{}",
                block.line,
                findings.len(),
                run.code,
                messages.join("\n")
            ));
        }
    }
    (failures, checked)
}

/// The lines of `### `kind`` up to the next heading of level 2 or 3.
fn kind_section<'a>(doc: &'a str, kind: &str) -> Option<Vec<&'a str>> {
    let heading = format!("### `{kind}`");
    let mut lines = doc.lines().skip_while(|l| l.trim() != heading);
    lines.next()?;
    Some(
        lines
            .take_while(|l| !l.starts_with("## ") && !l.starts_with("### "))
            .collect(),
    )
}

/// The body rows of the table whose header's first cell is `first`, as trimmed cells.
fn table(section: &[&str], first: &str) -> Vec<Vec<String>> {
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_string())
            .collect()
    };
    let mut rows = section
        .iter()
        .skip_while(|l| !(l.starts_with('|') && cells(l).first().is_some_and(|c| c == first)));
    rows.next();
    rows.next(); // the |---| line
    rows.take_while(|l| l.starts_with('|'))
        .map(|l| cells(l))
        .collect()
}

fn line_after<'a>(section: &[&'a str], prefix: &str) -> Option<&'a str> {
    section
        .iter()
        .find_map(|l| l.strip_prefix(prefix))
        .map(str::trim)
}

/// A bound as the tables write it: `0 to 20`, `1 to 64 MiB`, `1s to 10m`.
fn range(bound: &reviewflow_engine::contract::Bound) -> String {
    use reviewflow_engine::contract::Unit;
    let one = |v: u64| match bound.unit {
        Unit::Count => v.to_string(),
        Unit::Bytes if v >= 1 << 20 && v.is_multiple_of(1 << 20) => format!("{} MiB", v >> 20),
        Unit::Bytes => v.to_string(),
        Unit::Millis => reviewflow_engine::duration::format_duration_ms(v),
    };
    format!("{} to {}", one(bound.min), one(bound.max))
}

fn type_name(ty: &ValueType) -> String {
    match ty {
        ValueType::String => "string".into(),
        ValueType::Int(bound) => format!("int, {}", range(bound)),
        ValueType::Bool => "bool".into(),
        ValueType::Duration(bound) => format!("duration, {}", range(bound)),
        ValueType::Template => "template".into(),
        ValueType::Reference => "reference".into(),
        ValueType::Secret => "secret".into(),
        ValueType::Store => "store".into(),
        ValueType::Enum(words) => {
            let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
            quoted.join(" / ")
        }
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// The cells a child's row must have (all but the last, free-text column).
fn child_cells(c: &ChildSpec) -> Vec<String> {
    // A typed slot: `reference (blob)`.
    let slot = |ty: &ValueType| match ty {
        ValueType::Reference if !c.accepts.is_empty() => {
            let types: Vec<&str> = c.accepts.iter().map(|t| t.name()).collect();
            format!("reference ({})", types.join(" / "))
        }
        _ => type_name(ty),
    };
    let mut args = c.args.iter().map(slot).collect::<Vec<_>>().join(", ");
    match c.max_args {
        Some(0) => args = "—".into(),
        None => args.push_str(" …"),
        Some(_) => {}
    }
    if c.min_args == 0 && c.max_args != Some(0) {
        args.push_str(" (optional)");
    }
    let mut props: Vec<String> = c
        .props
        .iter()
        .map(|p| {
            let req = if p.required { " (required)" } else { "" };
            format!("`{}`: {}{req}", p.name, type_name(&p.ty))
        })
        .collect();
    if let Some(ty) = &c.open_props {
        props.push(format!("any name: {}", type_name(ty)));
    }
    let props = if props.is_empty() {
        "—".into()
    } else {
        props.join("; ")
    };
    vec![
        format!("`{}`", c.name),
        args,
        props,
        yes_no(c.required),
        yes_no(c.repeatable),
    ]
}

fn labels(rule: &LabelRule) -> String {
    let base = match &rule.propagate {
        Propagate::All => Some("inputs".to_string()),
        Propagate::None => None,
        Propagate::Children(children) => Some(
            children
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    };
    let add: Vec<&str> = rule
        .adding
        .iter()
        .map(|a| match a {
            LabelAdd::Untrusted => "untrusted",
            LabelAdd::Private => "private",
            LabelAdd::HeldSecrets => "held secrets",
            LabelAdd::ProgramSecrets => "the program's secrets",
        })
        .collect();
    let remove: Vec<&str> = rule
        .removing
        .iter()
        .map(|r| match r {
            LabelKind::Untrusted => "untrusted",
            LabelKind::Private => "private",
            LabelKind::Secret => "secret",
        })
        .collect();
    let mut out = match base {
        None if add.is_empty() => return "none".into(),
        None => add.join(", "),
        Some(b) => {
            let mut s = b;
            for a in &add {
                let _ = write!(s, " + {a}");
            }
            s
        }
    };
    for r in remove {
        let _ = write!(out, " − {r}");
    }
    out
}

fn fallback_line(c: &StageContract) -> String {
    if c.fallback.is_empty() {
        return "none".into();
    }
    c.fallback
        .iter()
        .map(|f| match f.value {
            FallbackValue::Bool(b) => format!("`{}` = #{b}", f.output),
            FallbackValue::Absent => format!("`{}` absent", f.output),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn effect_name(e: &Effect) -> String {
    match e {
        Effect::Keeps => "keeps",
        Effect::Publishes => "publishes",
        Effect::Executes => "executes",
        Effect::Reads => "reads",
    }
    .into()
}

/// What the doc's section of `c` must say, as text, to show in a failure.
fn expected_section(c: &StageContract) -> String {
    let mut s = format!(
        "### `{}`\n\n| child | arguments | properties | required | repeatable | meaning |\n|---|---|---|---|---|---|\n",
        c.kind
    );
    for child in &c.children {
        let _ = writeln!(s, "| {} | {} |", child_cells(child).join(" | "), child.doc);
    }
    if !c.outputs.is_empty() {
        s.push_str("\n| output | type | labels | meaning |\n|---|---|---|---|\n");
        for o in &c.outputs {
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} |",
                o.name,
                o.ty.name(),
                labels(&o.labels),
                o.doc
            );
        }
    }
    let _ = writeln!(s, "\nFallback: {}", fallback_line(c));
    let perms = c.permissions.iter().map(|p| format!("`{p}`")).collect();
    let _ = writeln!(s, "Permissions: {}", list_or_none(perms));
    let _ = writeln!(
        s,
        "Effects: {}",
        list_or_none(c.effects.iter().map(effect_name).collect())
    );
    s
}

#[test]
fn each_stage_kind_is_documented_as_its_contract_says() {
    let doc = doc_text();
    let registry = reviewflow_stdlib::registry();
    let mut failures = Vec::new();
    for c in registry.contracts() {
        let Some(section) = kind_section(&doc, &c.kind) else {
            failures.push(format!(
                "no section `### \\`{}\\``; expected:\n{}",
                c.kind,
                expected_section(c)
            ));
            continue;
        };
        let mut problems = Vec::new();
        let children = table(&section, "child");
        let want: Vec<Vec<String>> = c.children.iter().map(child_cells).collect();
        let got: Vec<Vec<String>> = children
            .iter()
            .map(|r| r.iter().take(5).cloned().collect())
            .collect();
        if got != want {
            problems.push(format!(
                "children table differs:\n  doc:      {got:?}\n  contract: {want:?}"
            ));
        }
        let outputs = table(&section, "output");
        let want: Vec<Vec<String>> = c
            .outputs
            .iter()
            .map(|o| {
                vec![
                    format!("`{}`", o.name),
                    o.ty.name().to_string(),
                    labels(&o.labels),
                ]
            })
            .collect();
        let got: Vec<Vec<String>> = outputs
            .iter()
            .map(|r| r.iter().take(3).cloned().collect())
            .collect();
        if got != want {
            problems.push(format!(
                "outputs table differs:\n  doc:      {got:?}\n  contract: {want:?}"
            ));
        }
        let checks = [
            ("Fallback: ", fallback_line(c)),
            (
                "Permissions: ",
                list_or_none(c.permissions.iter().map(|p| format!("`{p}`")).collect()),
            ),
            (
                "Effects: ",
                list_or_none(c.effects.iter().map(effect_name).collect()),
            ),
        ];
        for (prefix, want) in checks {
            let got = line_after(&section, prefix);
            if got != Some(want.as_str()) {
                problems.push(format!("`{prefix}` line: doc {got:?}, contract {want:?}"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "`{}`:\n{}\nexpected:\n{}",
                c.kind,
                problems.join("\n"),
                expected_section(c)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_block_reader_sees_markers_and_skips_other_fences() {
    let doc = "text\n<!-- check: clean -->\n\n```kdl\npipeline \"p\"\n```\n```text\n```kdl inside\n```\n```kdl\nx\n```\n";
    let blocks = fenced_blocks(doc);
    let kdl: Vec<&Block> = blocks.iter().filter(|b| b.lang == "kdl").collect();
    assert_eq!(kdl.len(), 2);
    assert_eq!(kdl[0].marker.as_deref(), Some("clean"));
    assert_eq!(kdl[0].line, 4);
    assert_eq!(kdl[0].text, "pipeline \"p\"\n");
    assert_eq!(kdl[1].marker, None);
}
